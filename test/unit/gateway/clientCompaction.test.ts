// The recogniser of a drop-in client's own compaction (workers/gateway/dropin/clientCompaction.ts, issue #12).
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import {
  carriedSummaries,
  isClientCompactionRequest,
  offersTools,
  summaryPosition,
} from '../../../workers/gateway/dropin/clientCompaction.js';

const CODEX_PROMPT =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.';
const history = (last: ChatMessage): ChatMessage[] => [
  { role: 'system', content: 'You are a coding agent.' },
  { role: 'user', content: 'Fix the build.' },
  { role: 'assistant', content: 'Done: the build passes.' },
  last,
];

describe('client compaction requests', () => {
  it('recognises Codex’s checkpoint prompt and Claude Code’s summary prompt in a tool-less request', () => {
    expect(isClientCompactionRequest(history({ role: 'user', content: CODEX_PROMPT }), false)).toBe(true);
    const parts: ChatMessage = { role: 'user', content: [{ type: 'text', text: CODEX_PROMPT }] };
    expect(isClientCompactionRequest(history(parts), false)).toBe(true);
    const claude = 'Your task is to create a detailed summary of the conversation so far, paying close attention…';
    expect(isClientCompactionRequest(history({ role: 'user', content: claude }), false)).toBe(true);
  });

  it('is not a compaction when tools are offered, the prompt is not last, or the user asks something else', () => {
    expect(isClientCompactionRequest(history({ role: 'user', content: CODEX_PROMPT }), true)).toBe(false);
    const later = [...history({ role: 'user', content: CODEX_PROMPT }), { role: 'assistant', content: 'ok' }];
    expect(isClientCompactionRequest(later as ChatMessage[], false)).toBe(false);
    expect(isClientCompactionRequest(history({ role: 'user', content: 'Summarise the build log.' }), false)).toBe(
      false,
    );
    expect(isClientCompactionRequest([], false)).toBe(false);
  });

  it('finds the summary the client got in its shorter history, from the divergence on', () => {
    const summary = 'HANDOFF: the build passes; next, the docs.';
    const after: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the build.' },
      { role: 'user', content: `Another language model produced a summary:\n${summary}\n` },
      { role: 'user', content: 'Now the docs.' },
    ];
    expect(summaryPosition(after, 2, summary)).toBe(2);
    expect(summaryPosition(after, 3, summary)).toBe(-1);
    expect(summaryPosition(after, 0, '  ')).toBe(-1);
    expect(offersTools([{ type: 'function' }])).toBe(true);
    expect(offersTools([])).toBe(false);
    expect(offersTools(undefined)).toBe(false);
  });

  it('recognises a summary prompt that forbids the tools it is offered (Claude Code’s /compact)', () => {
    const claude =
      'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far.';
    expect(isClientCompactionRequest(history({ role: 'user', content: claude }), true)).toBe(true);
    const allowed = 'Your task is to create a detailed summary of the conversation so far; read the files you need.';
    expect(isClientCompactionRequest(history({ role: 'user', content: allowed }), true)).toBe(false);
    // Forbidding tools alone does not make a compaction.
    const plain = 'Respond with text only: what did we fix?';
    expect(isClientCompactionRequest(history({ role: 'user', content: plain }), true)).toBe(false);
  });

  it('finds what a client carries of a summary with a <summary> block: the block’s text, in its own words around it', () => {
    const reply =
      '<analysis>\nThinking.\n</analysis>\n\n<summary>\n1. The build passes; the docs are next.\n</summary>';
    expect(carriedSummaries(reply)).toEqual([reply, '1. The build passes; the docs are next.']);
    expect(carriedSummaries('  plain summary  ')).toEqual(['plain summary']);
    expect(carriedSummaries('   ')).toEqual([]);
    const after: ChatMessage[] = [
      { role: 'system', content: 'You are a coding agent.' },
      {
        role: 'user',
        content: 'This session is being continued.\nSummary:\n1. The build passes; the docs are next.\n',
      },
    ];
    expect(summaryPosition(after, 0, reply)).toBe(1);
    // Too short to lead a history that opens otherwise.
    expect(summaryPosition(after, 0, reply, 64)).toBe(-1);
    expect(summaryPosition(after, 0, reply, 20)).toBe(1);
  });
});
