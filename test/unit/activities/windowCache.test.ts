// The worker's window cache (activities/compaction/windowCache.ts): exact row ids, frozen entries, bounded by
// estimated tokens and count (oldest first), expiry.
import { describe, expect, it } from 'vitest';
import { WindowCache } from '../../../activities/compaction/windowCache.js';
import type { ChatMessage } from '../../../engine/types.js';

const window = (n: number, tag = 'm'): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => ({
    role: 'assistant',
    content: null,
    tool_calls: [{ id: `${tag}${i}`, type: 'function', function: { name: 'f', arguments: '{}' } }],
  }));

describe('WindowCache', () => {
  it('answers only for the same compaction and exactly the same row ids, in order', () => {
    const cache = new WindowCache();
    const messages = window(3);
    cache.put('t1', 'c1', [10, 11, 12], messages, 30);
    expect(cache.get('t1', 'c1', [10, 11, 12])).toBe(messages);
    expect(cache.get('t2', 'c1', [10, 11, 12])).toBeUndefined();
    expect(cache.get('t1', 'c2', [10, 11, 12])).toBeUndefined();
    expect(cache.get('t1', 'c1', [10, 12, 11])).toBeUndefined();
    // A mismatch drops the entry: the caller reads the store from then on.
    expect(cache.get('t1', 'c1', [10, 11, 12])).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(() => cache.put('t1', 'c1', [1, 2], window(3), 1)).toThrow(RangeError);
  });

  it('freezes what it keeps, deeply: no phase can change what a later phase reads', () => {
    const cache = new WindowCache();
    const ids = [1, 2];
    cache.put('t', 'c', ids, window(2), 10);
    const kept = cache.get('t', 'c', ids)!;
    expect(() => {
      (kept[0] as { content: unknown }).content = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      kept[1]!.tool_calls![0]!.function.arguments = '{"x":1}';
    }).toThrow(TypeError);
    expect(() => (kept as ChatMessage[]).push(window(1)[0]!)).toThrow(TypeError);
    ids.push(3); // the caller's id array stays its own
    expect(cache.get('t', 'c', [1, 2])).toBe(kept);
  });

  it('evicts the oldest entries beyond its token and entry bounds; an oversized window is not kept', () => {
    const cache = new WindowCache({ maxTokens: 100, maxEntries: 2 });
    cache.put('t', 'a', [1], window(1, 'a'), 40);
    cache.put('t', 'b', [2], window(1, 'b'), 40);
    cache.put('t', 'c', [3], window(1, 'c'), 40); // 120 tokens: a goes
    expect(cache.get('t', 'a', [1])).toBeUndefined();
    expect(cache.get('t', 'b', [2])).toBeDefined();
    expect(cache.get('t', 'c', [3])).toBeDefined();
    cache.put('t', 'd', [4], window(1, 'd'), 10); // three entries: b goes
    expect(cache.get('t', 'b', [2])).toBeUndefined();
    expect(cache.size).toBe(2);
    cache.put('t', 'huge', [5], window(1, 'h'), 101);
    expect(cache.get('t', 'huge', [5])).toBeUndefined();
    expect(cache.size).toBe(2);
    // Putting a compaction again replaces its entry (and its tokens).
    cache.put('t', 'd', [4], window(1, 'd'), 60);
    cache.put('t', 'c', [3], window(1, 'c'), 40);
    expect(cache.get('t', 'd', [4])).toBeDefined();
    expect(cache.get('t', 'c', [3])).toBeDefined();
  });

  it('forgets entries older than its time to live, and on delete', () => {
    let now = 1_000;
    const cache = new WindowCache({ ttlMs: 500, now: () => now });
    cache.put('t', 'a', [1], window(1), 1);
    cache.put('t', 'b', [2], window(1), 1);
    now += 500;
    expect(cache.get('t', 'a', [1])).toBeDefined();
    now += 1;
    expect(cache.get('t', 'a', [1])).toBeUndefined();
    cache.delete('t', 'b');
    expect(cache.get('t', 'b', [2])).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
