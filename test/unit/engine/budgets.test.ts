import { describe, expect, it } from 'vitest';
import { computeMaxSummaryTokens, computeSummaryBudget, computeTailTokenBudget } from '../../../engine/budgets.js';
import { normalizeCompressionConfig } from '../../../engine/config.js';
import { deriveThresholds } from '../../../engine/thresholds.js';

const LEAN = normalizeCompressionConfig();
const LEGACY = normalizeCompressionConfig({ tailMode: 'legacy' });

describe('SPEC §6.3 worked budgets (defaults)', () => {
  it.each([
    [10000, 0.75, 8500, 2000, 1700, 500],
    [40000, 0.75, 34000, 8000, 6800, 2000],
    [64000, 0.75, 54400, 10000, 10880, 3200],
    [128000, 0.75, 96000, 10000, 19200, 6400],
    [200000, 0.75, 150000, 10000, 30000, 10000],
    [200000, 0, 100000, 10000, 20000, 10000],
    [400000, 0.75, 300000, 10000, 60000, 12000],
    [600000, 0.75, 300000, 15000, 60000, 12000],
    [1000000, 0.75, 500000, 25000, 100000, 12000],
    [2000000, 0.75, 1000000, 25000, 200000, 12000],
  ])(
    'ctx %s, floor %s → threshold %s, lean %s, legacy %s, max summary %s',
    (ctx, floor, threshold, lean, legacy, max) => {
      const config = normalizeCompressionConfig({ smallContextFloor: floor });
      const { thresholdTokens } = deriveThresholds({ model: 'some-model', contextLength: ctx, config });
      expect(thresholdTokens).toBe(threshold);
      expect(computeTailTokenBudget(ctx, thresholdTokens, LEAN)).toBe(lean);
      expect(computeTailTokenBudget(ctx, thresholdTokens, LEGACY)).toBe(legacy);
      expect(computeMaxSummaryTokens(ctx)).toBe(max);
    },
  );

  it('reproduces the product documentation example with floor 0 and legacy tail', () => {
    const config = normalizeCompressionConfig({ smallContextFloor: 0, tailMode: 'legacy' });
    const { thresholdTokens } = deriveThresholds({ model: 'm', contextLength: 200000, config });
    expect([
      thresholdTokens,
      computeTailTokenBudget(200000, thresholdTokens, config),
      computeMaxSummaryTokens(200000),
    ]).toEqual([100000, 20000, 10000]);
  });
});

describe('computeTailTokenBudget — SPEC §6.1', () => {
  it('legacy uses the clamped target ratio', () => {
    expect(computeTailTokenBudget(1000000, 500000, { tailMode: 'legacy', targetRatio: 0.05 })).toBe(50000);
    expect(computeTailTokenBudget(1000000, 500000, { tailMode: 'legacy', targetRatio: 0.95 })).toBe(200000);
    expect(computeTailTokenBudget(1000000, 500000, { tailMode: 'legacy', targetRatio: 0.3 })).toBe(150000);
  });

  it('is capped at 20 % of ctx and never below 1', () => {
    expect(computeTailTokenBudget(1000000, 2000000, { tailMode: 'legacy', targetRatio: 0.8 })).toBe(200000);
    expect(computeTailTokenBudget(4, 1, LEAN)).toBe(1);
    expect(computeTailTokenBudget(1000, 1, LEGACY)).toBe(1);
  });

  it('lean is 2.5 % of ctx clamped to [10,000, 25,000]', () => {
    expect(computeTailTokenBudget(800000, 0, LEAN)).toBe(20000);
    expect(computeTailTokenBudget(399999, 0, LEAN)).toBe(10000);
    expect(computeTailTokenBudget(1200000, 0, LEAN)).toBe(25000);
  });
});

describe('computeSummaryBudget — SPEC §6.2 examples', () => {
  it.each([
    [5000, 200000, 2000],
    [20000, 200000, 4000],
    [50000, 200000, 10000],
    [80000, 200000, 10000],
    [500000, 1000000, 12000],
    [0, 10000, 2000],
    [1000000, 10000, 2000],
    [-500, 200000, 2000],
    [Number.NaN, 200000, 2000],
    [10004, 200000, 2000],
    [15009, 200000, 3001],
  ])('content %s on ctx %s → %s', (content, ctx, expected) => {
    expect(computeSummaryBudget(content, ctx)).toBe(expected);
  });

  it('maxSummaryTokens is min(5 % of ctx, 12,000)', () => {
    expect(computeMaxSummaryTokens(239999)).toBe(11999);
    expect(computeMaxSummaryTokens(240000)).toBe(12000);
    expect(computeMaxSummaryTokens(10000)).toBe(500);
  });
});
