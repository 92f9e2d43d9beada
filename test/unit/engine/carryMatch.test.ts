// The linear greedy match equals the literal SPEC §13.2 step 1 algorithm; the shape prefilter changes no match.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchCarriedRows } from '../../../engine/commit/carryMatch.js';
import { wireKey, wireShape } from '../../../engine/commit/messageKeys.js';
import { carriedIndexes } from '../../../engine/commit/plan.js';
import type { ChatMessage } from '../../../engine/types.js';

/** SPEC §13.2 step 1, literally: the smallest unmatched r ≥ p with an equal key. */
function literalMatch(oldKeys: readonly string[], newKeys: readonly string[]): number[] {
  const matched = new Set<number>();
  let p = 0;
  return newKeys.map((key) => {
    for (let r = p; r < oldKeys.length; r++) {
      if (!matched.has(r) && oldKeys[r] === key) {
        matched.add(r);
        p = r + 1;
        return r;
      }
    }
    return -1;
  });
}

describe('matchCarriedRows', () => {
  it('matches the examples', () => {
    expect(matchCarriedRows(['a', 'b', 'a', 'b', 'c'], ['s', 'b', 'a', 'b', 'c'])).toEqual([-1, 1, 2, 3, 4]);
    expect(matchCarriedRows(['a', 'b', 'c'], ['c', 'a', 'b'])).toEqual([2, -1, -1]);
    expect(matchCarriedRows([], ['x'])).toEqual([-1]);
    expect(matchCarriedRows(['x'], [])).toEqual([]);
  });

  it('agrees with the literal algorithm on random inputs (small alphabets force duplicates)', () => {
    const keys = fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { maxLength: 30 });
    fc.assert(
      fc.property(keys, keys, (oldKeys, newKeys) => {
        expect(matchCarriedRows(oldKeys, newKeys)).toEqual(literalMatch(oldKeys, newKeys));
      }),
      { numRuns: 2_000 },
    );
  });

  it('matches 200k rows with heavy duplication (the tail carried in order)', () => {
    const oldKeys = Array.from({ length: 200_000 }, (_, i) => (i % 3 === 0 ? 'dup' : `k${i}`));
    const newKeys = ['summary', ...oldKeys.slice(100_000)];
    const result = matchCarriedRows(oldKeys, newKeys);
    expect(result[0]).toBe(-1);
    expect(result.slice(1)).toEqual(Array.from({ length: 100_000 }, (_, i) => 100_000 + i));
  });
});

describe('carriedIndexes', () => {
  // Same-length contents that differ, parts, tool calls and names: shapes collide often, keys less often.
  const message: fc.Arbitrary<ChatMessage> = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'assistant'), content: fc.constantFrom('ab', 'cd', 'abc', null) }),
    fc.record({
      role: fc.constant('tool'),
      content: fc.constantFrom('ok', 'no', 'ok!'),
      tool_call_id: fc.constantFrom('c1', 'c2'),
    }),
    fc.record({
      role: fc.constant('assistant'),
      content: fc.constant(null),
      tool_calls: fc.constantFrom(
        [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        [{ id: 'c2', type: 'function', function: { name: 'f', arguments: '{}' } }],
      ),
    }),
    fc.record({
      role: fc.constant('user'),
      content: fc.constantFrom([{ type: 'text', text: 'ab' }], [{ type: 'text', text: 'cd' }]),
    }),
  ) as fc.Arbitrary<ChatMessage>;

  it("equals the match over every row's key (random transcripts)", () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 25 }), fc.array(message, { maxLength: 12 }), (old, output) => {
        const rows = old.map((m, i) => ({ id: i + 1, position: i, message: m }));
        expect(carriedIndexes(rows, output)).toEqual(matchCarriedRows(old.map(wireKey), output.map(wireKey)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives equal shapes to messages with equal keys', () => {
    fc.assert(
      fc.property(message, message, (a, b) => {
        if (wireKey(a) === wireKey(b)) expect(wireShape(a)).toBe(wireShape(b));
      }),
      { numRuns: 2_000 },
    );
  });
});
