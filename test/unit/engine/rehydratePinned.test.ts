import { describe, expect, it } from 'vitest';
import { type ChatMessage, insertAfterSummary, pinnedToRehydrate } from '../../../engine/index.js';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const assistant = (content: string): ChatMessage => ({ role: 'assistant', content });
const call: ChatMessage = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{}' } }],
};
const result: ChatMessage = { role: 'tool', tool_call_id: 'c1', content: 'file text' };

describe('SPEC §19 rehydrate_pinned', () => {
  const input = [user('head'), user('keep me'), call, result, assistant('and me'), user('not pinned'), user('tail')];
  const pinned = [true, true, true, true, true, false, true];

  it('takes the pinned standalone messages of the summarised window, in order', () => {
    // Window [1, 6): the head (0) and the tail (6) are not summarised, so they never come back twice.
    expect(pinnedToRehydrate(input, pinned, { headEnd: 1, cut: 6 })).toEqual([user('keep me'), assistant('and me')]);
  });

  it('never brings back half of a tool call/result pair', () => {
    const back = pinnedToRehydrate(input, pinned, { headEnd: 1, cut: 6 });
    expect(back.some((m) => m.role === 'tool' || (m.tool_calls?.length ?? 0) > 0)).toBe(false);
  });

  it('inserts right after the summary row', () => {
    const output = [user('head'), user('[summary]'), user('tail')];
    expect(insertAfterSummary(output, 1, [user('keep me')])).toEqual([
      user('head'),
      user('[summary]'),
      user('keep me'),
      user('tail'),
    ]);
    expect(insertAfterSummary(output, 1, [])).toEqual(output);
  });
});
