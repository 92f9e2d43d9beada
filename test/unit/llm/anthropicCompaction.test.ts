// The pure parts of Anthropic compaction blocks (issue #13 §3, SPEC §19 `anthropic_native`): where a transcript is
// cut for a request that starts from a block, the block first and alone in its assistant message (or with the first
// assistant turn after it), what the host's summary adds after the block, the compaction request's body, its cost
// from `usage.iterations`, and the documented limit on a request's last turn.
import { describe, expect, it } from 'vitest';
import type { AnthropicCompactionBlock } from '../../../contracts/compaction.js';
import { archivePointerLine, type ChatMessage, SUMMARY_PREFIX } from '../../../engine/index.js';
import {
  COMPACT_BETA,
  compactionRequestBody,
  endsOnOpenToolCall,
  rowsAfterNativeSummary,
  summaryUsageOf,
  textAfterBlock,
  toAnthropicRequestWithBlock,
} from '../../../infra/llm/anthropicCompaction.js';

const block: AnthropicCompactionBlock = {
  type: 'compaction',
  content: '## Goal\nShip it.',
  encrypted_content: 'enc',
  signature: 'sig',
  tool_changes: [],
};
const SUMMARY = `${SUMMARY_PREFIX}\n## Goal\nShip it.\n${archivePointerLine('c1')}`;

const rows = (messages: ChatMessage[]) => messages.map((message, i) => ({ id: 100 + i, message }));

describe('rowsAfterNativeSummary', () => {
  const head: ChatMessage[] = [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'first ask' },
    { role: 'assistant', content: 'first answer' },
  ];

  it('keeps system rows and what follows a standalone summary; the head it stands for is left out', () => {
    const transcript = rows([...head, { role: 'user', content: SUMMARY }, { role: 'assistant', content: 'later' }]);
    const after = rowsAfterNativeSummary(transcript, { rowId: 103, summaryText: SUMMARY });
    expect(after?.map((r) => [r.id, r.message.content])).toEqual([
      [100, 'sys'],
      [104, 'later'],
    ]);
  });

  it('keeps the own text of a merged summary row (string and parts)', () => {
    const merged = rows([...head, { role: 'user', content: `${SUMMARY}\n\nStep 3, please.` }]);
    expect(rowsAfterNativeSummary(merged, { rowId: 103, summaryText: SUMMARY })?.at(-1)?.message).toEqual({
      role: 'user',
      content: 'Step 3, please.',
    });
    const parts = rows([
      ...head,
      {
        role: 'user',
        content: [
          { type: 'text', text: SUMMARY },
          { type: 'image_url', image_url: { url: 'https://x/y.png' } },
        ],
      },
    ]);
    expect(rowsAfterNativeSummary(parts, { rowId: 103, summaryText: SUMMARY })?.at(-1)?.message.content).toEqual([
      { type: 'image_url', image_url: { url: 'https://x/y.png' } },
    ]);
  });

  it('is null when the summary row is no longer in the transcript (a later compaction archived it)', () => {
    expect(rowsAfterNativeSummary(rows(head), { rowId: 999, summaryText: SUMMARY })).toBeNull();
  });
});

describe('toAnthropicRequestWithBlock', () => {
  it('puts the block first, verbatim, with the host text after it', () => {
    const request = toAnthropicRequestWithBlock(
      [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'next?' },
      ],
      { block, after: 'pointer' },
    );
    expect(request.system).toBe('sys');
    expect(request.messages).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'compaction',
            content: '## Goal\nShip it.',
            encrypted_content: 'enc',
            signature: 'sig',
            tool_changes: [],
          },
          { type: 'text', text: 'pointer' },
        ],
      },
      { role: 'user', content: 'next?' },
    ]);
  });

  it('folds a leading assistant turn into the block message: no two assistant messages in a row', () => {
    const request = toAnthropicRequestWithBlock(
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 't1', content: 'a.txt' },
      ],
      { block: { type: 'compaction', content: 'x', encrypted_content: null }, after: '' },
    );
    expect(request.messages.map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(request.messages[0]?.content).toEqual([
      { type: 'compaction', content: 'x', encrypted_content: null },
      { type: 'tool_use', id: 't1', name: 'ls', input: {} },
    ]);
  });
});

describe('the summary around the block', () => {
  it('textAfterBlock: what the committed body adds, or nothing when it no longer starts with the content', () => {
    expect(textAfterBlock(`## Goal\nShip it.\n${archivePointerLine('c1')}`, block)).toBe(archivePointerLine('c1'));
    expect(textAfterBlock('## Goal\nShip it.', block)).toBe('');
    expect(textAfterBlock('something else', block)).toBe('');
  });

  it('summaryUsageOf: the compaction iterations, summed; the top level only without them', () => {
    const usage = {
      input_tokens: 0,
      output_tokens: 0,
      iterations: [
        { type: 'compaction', input_tokens: 9_000, output_tokens: 600, cache_read_input_tokens: 100 },
        { type: 'message', input_tokens: 50, output_tokens: 5 },
        { type: 'compaction', input_tokens: 1_000, output_tokens: 40, cache_creation_input_tokens: 7 },
      ],
    };
    expect(summaryUsageOf(usage)).toEqual({
      input_tokens: 10_000,
      output_tokens: 640,
      cache_read_tokens: 100,
      cache_write_tokens: 7,
    });
    expect(summaryUsageOf({ input_tokens: 12, output_tokens: 3 })).toEqual({
      input_tokens: 12,
      output_tokens: 3,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    });
  });

  it('the compaction request: the beta, the summarize config with our instructions, never context_management', () => {
    const body = compactionRequestBody({
      model: 'claude-sonnet-5-5',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hello' },
      ],
      leading: null,
      instructions: 'INSTRUCTIONS',
      maxTokens: 4_096,
    });
    expect(body).toEqual({
      model: 'claude-sonnet-5-5',
      max_tokens: 4_096,
      system: 'sys',
      messages: [{ role: 'user', content: 'hello' }],
      compaction: { type: 'summarize', instructions: 'INSTRUCTIONS' },
      betas: [COMPACT_BETA],
    });
  });

  it('endsOnOpenToolCall: only an assistant turn that ends with calls', () => {
    const call = { id: 'c', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    expect(endsOnOpenToolCall([{ role: 'assistant', content: null, tool_calls: [call] }])).toBe(true);
    expect(
      endsOnOpenToolCall([
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'c', content: 'ok' },
      ]),
    ).toBe(false);
    expect(endsOnOpenToolCall([{ role: 'assistant', content: 'done' }])).toBe(false);
  });
});
