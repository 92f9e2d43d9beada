// The linear greedy match equals the literal SPEC §13.2 step 1 algorithm.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchCarriedRows } from '../../../engine/commit/carryMatch.js';

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

  it('is linear: 200k rows with heavy duplication match quickly', () => {
    const oldKeys = Array.from({ length: 200_000 }, (_, i) => (i % 3 === 0 ? 'dup' : `k${i}`));
    const newKeys = ['summary', ...oldKeys.slice(100_000)];
    const started = performance.now();
    const result = matchCarriedRows(oldKeys, newKeys);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result[0]).toBe(-1);
    expect(result.slice(1)).toEqual(Array.from({ length: 100_000 }, (_, i) => 100_000 + i));
  });
});
