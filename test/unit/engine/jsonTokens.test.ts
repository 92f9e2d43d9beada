import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimateJsonTokensRough, estimateTokensRough } from '../../../engine/index.js';

const reference = (value: unknown): number => {
  const json = JSON.stringify(value) as string | undefined;
  return json === undefined ? 0 : estimateTokensRough(json);
};

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // includes lone surrogates
  fc.string({
    unit: fc.constantFrom('"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', 'a', '字', 'é', '😀', '\u2028'),
  }),
  fc.string({ unit: fc.constantFrom(...'你好世界한국어テストＨｅｌｌｏ') }),
);

describe('estimateJsonTokensRough = estimateTokensRough(JSON.stringify(value))', () => {
  it('spec example: {role:"user",content:"hi"} → 8', () => {
    expect(estimateJsonTokensRough({ role: 'user', content: 'hi' })).toBe(8);
  });

  it('matches the reference on arbitrary JSON-like values', () => {
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        text,
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.constant(undefined),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(text, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(estimateJsonTokensRough(v)).toBe(reference(v));
      }),
      { seed: 424242, numRuns: 3_000 },
    );
  });

  it('special values fall back to JSON.stringify semantics', () => {
    const date = new Date(0);
    const cases: unknown[] = [
      { at: date, fn: () => 1, sym: Symbol('s'), nested: { toJSON: () => '字x' } },
      [undefined, () => 1, Number.NaN, Number.POSITIVE_INFINITY, -0, 1e21],
      new Map([[1, 2]]),
      Object.assign(Object.create(null), { a: '😀' }),
      { deep: JSON.parse(`${'['.repeat(80)}"x"${']'.repeat(80)}`) },
      undefined,
      'top-level string',
    ];
    for (const v of cases) expect(estimateJsonTokensRough(v)).toBe(reference(v));
  });

  it('throws like JSON.stringify on cycles and bigint', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => estimateJsonTokensRough(cyclic)).toThrow(TypeError);
    expect(() => estimateJsonTokensRough({ n: 1n })).toThrow(TypeError);
  });
});
