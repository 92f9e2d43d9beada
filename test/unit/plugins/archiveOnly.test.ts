// The shipped `archive-only` plugin (plugins/context_engine/archive-only, SPEC §10.3) on its own: what it keeps, the
// pointer it writes, and that the host accepts what it returns (whole tool-call pairs, chat wire shape).
import { describe, expect, it } from 'vitest';
import { engineOutputProblem } from '../../../activities/compaction/engineCompress.js';
import type { ChatMessage } from '../../../engine/index.js';
import createArchiveOnlyEngine, {
  ARCHIVE_MARKER,
  keptRange,
  pointerRole,
} from '../../../plugins/context_engine/archive-only/index.js';

function call(id: string): ChatMessage[] {
  return [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'ls', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: id, content: `listing ${id}` },
  ];
}

const conversation: ChatMessage[] = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'u0' },
  ...call('a'),
  { role: 'assistant', content: 'a0' },
  { role: 'user', content: 'u1' },
  { role: 'assistant', content: 'a1' },
  { role: 'user', content: 'u2' },
  ...call('b'),
  { role: 'assistant', content: 'a2' },
];

const summarize = async () => 'unused';

describe('archive-only', () => {
  const engine = createArchiveOnlyEngine({
    model: 'm',
    contextLength: 100_000,
    config: { protectFirstN: 2, protectLastN: 2 },
    summarize,
  });

  it('is an engine the host accepts (SPEC §10.1 shape, §18.11)', () => {
    expect(engine.name).toBe('archive-only');
    expect(engine.shouldCompress(49_999)).toBe(false);
    expect(engine.shouldCompress(50_000)).toBe(true);
    expect(engine.getStatus()).toMatchObject({ context_length: 100_000, threshold_tokens: 50_000 });
  });

  it('keeps the head without cutting a call from its result, and moves a tail-opening result’s call into the tail', () => {
    // protectFirstN 2 ends on the call: its result joins the head. protectLastN 2 starts on b's result: its call joins.
    expect(keptRange(conversation, { protectFirstN: 2, protectLastN: 2 })).toEqual({ headEnd: 4, tailStart: 8 });
  });

  it('replaces the middle with one pointer and changes nothing else', async () => {
    const out = await engine.compress(conversation, { focusTopic: 'the listing' });
    expect(out.slice(0, 4)).toEqual(conversation.slice(0, 4));
    expect(out.slice(5)).toEqual(conversation.slice(8));
    expect(out[4]).toEqual({
      role: 'user',
      content: `${ARCHIVE_MARKER} 4 earlier message(s) of this conversation were moved to its archive without summarising. They are stored unchanged and can be searched; ask for them if you need them. Focus asked for: the listing.`,
    });
    expect(engineOutputProblem(out, conversation)).toBeNull();
    expect(engine.getStatus().compression_count).toBe(1);
  });

  it('after a user head the pointer speaks as the assistant', async () => {
    const e = createArchiveOnlyEngine({
      model: 'm',
      contextLength: 100_000,
      config: { protectFirstN: 1, protectLastN: 1 },
      summarize,
    });
    const out = await e.compress(conversation.filter((m) => m.role !== 'tool' && !m.tool_calls));
    expect(out[2]?.role).toBe('assistant');
  });

  it('returns the input unchanged when there is nothing between head and tail, or only its own pointer', async () => {
    const short = conversation.slice(0, 5);
    expect(await engine.compress(short)).toEqual(short);
    const once = await engine.compress(conversation);
    expect(await engine.compress(once)).toEqual(once);
  });
});

describe('pointerRole', () => {
  it.each([
    ['user', 'user', 'assistant'],
    ['user', 'assistant', 'assistant'],
    [undefined, 'user', 'user'],
    ['system', 'assistant', 'user'],
    ['tool', 'user', 'assistant'],
    ['tool', 'assistant', 'user'],
    ['assistant', 'assistant', 'user'],
    ['assistant', 'user', 'assistant'],
  ])('between %s and %s: %s', (before, after, role) => {
    expect(pointerRole(before, after)).toBe(role);
  });
});

describe('engineOutputProblem (what the host refuses to commit from an engine)', () => {
  const q: ChatMessage = { role: 'user', content: 'q' };
  const [callC, resultC] = call('c') as [ChatMessage, ChatMessage];

  it('names the field', () => {
    expect(engineOutputProblem('x', [])).toBe('compress() must return an array of messages');
    expect(engineOutputProblem([], [])).toBe('compress() returned no messages');
    expect(engineOutputProblem([{ role: 'robot', content: 'x' }], [])).toBe(
      'messages[0].role must be one of system, user, assistant, tool',
    );
    expect(engineOutputProblem([{ role: 'user' }], [])).toBe('messages[0].content is required (use null for none)');
  });

  it('refuses a call cut from its result, or a result moved away from its call', () => {
    const input = [q, callC, resultC, q];
    const split = 'a tool call is separated from its result (c)';
    expect(engineOutputProblem([q, resultC, q], input)).toBe(split);
    expect(engineOutputProblem([callC, q, q], input)).toBe(split);
    // Both kept, but the pointer put between them, or the result before its call: still separated.
    expect(engineOutputProblem([q, callC, q, resultC, q], input)).toBe(split);
    expect(engineOutputProblem([q, resultC, callC, q], input)).toBe(split);
    expect(engineOutputProblem(input, input)).toBeNull();
    expect(engineOutputProblem(conversation, conversation)).toBeNull();
  });

  it('accepts a call at the very end still waiting for its result, and what the input already had', () => {
    expect(engineOutputProblem([q, callC], [q, callC])).toBeNull();
    // An irregularity the stored transcript already had is not the engine's doing.
    expect(engineOutputProblem([q, resultC, q], [q, resultC, q, q])).toBeNull();
  });
});
