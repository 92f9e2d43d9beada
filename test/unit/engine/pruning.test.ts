import { describe, expect, it } from 'vitest';
import {
  DUPLICATE_TOOL_OUTPUT,
  ORPHAN_CALL_STUB,
  PRUNED_TOOL_OUTPUT,
  pruneToolOutputs,
} from '../../../engine/index.js';
import { asst, call, chars, expectSameObjects, tool, user } from './builders.js';

describe('pruneToolOutputs (§8.2)', () => {
  it('clears tool rows longer than 200 characters before the cut only', () => {
    const list = [user('u'), asst(null, [call('a')]), tool('a', chars(201)), tool('b', chars(300, 'y'))];
    const { messages, prunedCount } = pruneToolOutputs(list, 3);
    expect(messages[2]?.content).toBe(PRUNED_TOOL_OUTPUT);
    expect(messages[3]).toBe(list[3]);
    expect(prunedCount).toBe(1);
  });

  it('exactly 200 characters is not cleared but takes part in dedup', () => {
    const same = chars(200, 'z');
    const list = [tool('a', same), tool('b', chars(200, 'q')), tool('c', same)];
    const { messages, prunedCount } = pruneToolOutputs(list, 3);
    expect(messages.map((m) => m.content)).toEqual([DUPLICATE_TOOL_OUTPUT, chars(200, 'q'), same]);
    expect(prunedCount).toBe(1);
  });

  it('199-character duplicates are not deduplicated', () => {
    const list = [tool('a', chars(199)), tool('b', chars(199))];
    expect(pruneToolOutputs(list, 2).prunedCount).toBe(0);
  });

  it('dedups across the whole list: the newest copy (even in the tail) keeps its text', () => {
    const big = chars(5000, 'd');
    const list = [tool('a', big), tool('b', big), user('x'), tool('c', big)];
    const { messages, prunedCount } = pruneToolOutputs(list, 1);
    expect(messages.map((m) => m.content)).toEqual([DUPLICATE_TOOL_OUTPUT, DUPLICATE_TOOL_OUTPUT, 'x', big]);
    expect(prunedCount).toBe(2);
  });

  it('a deduplicated row before the cut counts once', () => {
    const big = chars(500);
    const { messages, prunedCount } = pruneToolOutputs([tool('a', big), tool('b', big)], 2);
    expect(messages.map((m) => m.content)).toEqual([DUPLICATE_TOOL_OUTPUT, PRUNED_TOOL_OUTPUT]);
    expect(prunedCount).toBe(2);
  });

  it('never touches placeholders, empty, null or array content, or non-tool rows', () => {
    const parts = [{ type: 'text' as const, text: chars(900) }];
    const list = [
      tool('a', PRUNED_TOOL_OUTPUT),
      tool('b', DUPLICATE_TOOL_OUTPUT),
      tool('c', ORPHAN_CALL_STUB),
      tool('d', ''),
      tool('e', null),
      tool('f', parts),
      user(chars(900)),
      asst(chars(900)),
    ];
    const result = pruneToolOutputs(list, list.length);
    expect(result.prunedCount).toBe(0);
    expectSameObjects(result.messages, list);
  });

  it('counts characters as code points', () => {
    const emoji = '😀'.repeat(150); // 300 UTF-16 units, 150 characters
    const cjk = '字'.repeat(201);
    const { messages } = pruneToolOutputs([tool('a', emoji), tool('b', cjk)], 2);
    expect(messages[0]?.content).toBe(emoji);
    expect(messages[1]?.content).toBe(PRUNED_TOOL_OUTPUT);
  });

  it('is idempotent and never mutates the input; changed rows keep other properties', () => {
    const big = chars(1000);
    const list = [
      { ...tool('a', big, 'read_file'), extra: { keep: true } },
      tool('b', big),
      tool('c', chars(400, 'k')),
      tool('d', big),
    ];
    const before = structuredClone(list);
    const once = pruneToolOutputs(list, 3);
    expect(list).toEqual(before);
    expect(once.messages[0]).toEqual({
      role: 'tool',
      tool_call_id: 'a',
      name: 'read_file',
      extra: { keep: true },
      content: DUPLICATE_TOOL_OUTPUT,
    });
    const twice = pruneToolOutputs(once.messages, 3);
    expect(twice.prunedCount).toBe(0);
    expect(twice.messages).toEqual(once.messages);
  });
});

describe('dedup with many similar outputs', () => {
  it('distinct outputs that share length and sampled characters are never merged', () => {
    // Same length, same characters everywhere except one position: identical fingerprints, different strings.
    const base = chars(400, 'a');
    const variants = Array.from(
      { length: 40 },
      (_, i) => `${base.slice(0, 7)}${String.fromCharCode(66 + i)}${base.slice(8)}`,
    );
    const list = [...variants, ...variants].map((text, i) => tool(`c${i}`, text));
    const { messages, prunedCount } = pruneToolOutputs(list, 0);
    expect(prunedCount).toBe(40);
    expect(messages.slice(0, 40).every((m) => m.content === DUPLICATE_TOOL_OUTPUT)).toBe(true);
    expect(messages.slice(40).map((m) => m.content)).toEqual(variants);
  });
});
