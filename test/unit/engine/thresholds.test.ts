import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CompressionConfig, normalizeCompressionConfig } from '../../../engine/config.js';
import { computeThresholdTokens, deriveThresholds, resolveModelThreshold } from '../../../engine/thresholds.js';

const DEFAULTS = normalizeCompressionConfig();
const FLOOR_OFF = normalizeCompressionConfig({ smallContextFloor: 0 });

function derive(contextLength: number, config: CompressionConfig = DEFAULTS, model = 'some-model', provider?: string) {
  return deriveThresholds({ model, contextLength, provider, config });
}

describe('resolveModelThreshold — SPEC §5.2 example table (fallback 0.50)', () => {
  it.each([
    [{ gpt: 0.7 }, '', undefined, 0.5],
    [{ claude: 0.6 }, 'anthropic/claude-sonnet-4.6', undefined, 0.6],
    [{ 'glm-5.2': 0.4, 'glm-5.2-1M': 0.25 }, 'glm-5.2-1M', undefined, 0.25],
    [{ 'claude-sonnet': 0.7, claude: 0.6 }, 'anthropic/claude-sonnet-4.6', undefined, 0.7],
    [{ claude: 0.6, 'claude-sonnet': 0.7 }, 'anthropic/claude-sonnet-4.6', undefined, 0.7],
    [{ sonnet: 0.6, claude: 0.7 }, 'claude-sonnet', undefined, 0.6],
    [{ 'openrouter:claude': 0.9, claude: 0.6 }, 'claude-3', 'openrouter', 0.9],
    [{ 'openrouter:claude': 0.9, claude: 0.6 }, 'claude-3', 'anthropic', 0.6],
    [{ 'anthropic:claude': 0.9, 'claude-sonnet': 0.6 }, 'claude-sonnet-4', 'anthropic', 0.6],
    [{ Claude: 0.6 }, 'anthropic/claude-3', undefined, 0.6],
    [{ claude: 'high', cl: 0.6 }, 'claude-3', undefined, 0.6],
  ] as const)('%j, model %j, provider %j → %s', (map, model, provider, expected) => {
    expect(resolveModelThreshold(model, map as unknown as Record<string, number>, 0.5, provider)).toBe(expected);
  });

  it('scoped beats unscoped on equal length regardless of order', () => {
    expect(resolveModelThreshold('claude-3', { claude: 0.6, 'openrouter:claude': 0.9 }, 0.5, 'openrouter')).toBe(0.9);
  });

  it('returns the fallback for a missing or empty map, or when nothing matches', () => {
    expect(resolveModelThreshold('claude-3', undefined, 0.42)).toBe(0.42);
    expect(resolveModelThreshold('claude-3', {}, 0.42)).toBe(0.42);
    expect(resolveModelThreshold('claude-3', { gpt: 0.7 }, 0.42)).toBe(0.42);
  });

  it('ignores values outside (0, 1] and non-finite values one by one', () => {
    const map = { claude: 0, 'claude-': 1.5, 'claude-3': Number.NaN, cla: 1, c: 0.3 };
    expect(resolveModelThreshold('claude-3', map, 0.5)).toBe(1);
  });

  it('a scoped key needs a provider; a missing provider is the empty string', () => {
    expect(resolveModelThreshold('claude-3', { 'anthropic:claude': 0.9 }, 0.5)).toBe(0.5);
    expect(resolveModelThreshold('claude-3', { 'ANTHROPIC:Claude': 0.9 }, 0.5, 'Anthropic')).toBe(0.9);
  });

  it('matches model ids containing ":" only through a scoped key (split at the first colon)', () => {
    expect(resolveModelThreshold('qwen:7b', { 'ollama:qwen:7b': 0.8 }, 0.5, 'ollama')).toBe(0.8);
    expect(resolveModelThreshold('qwen:7b', { 'qwen:7b': 0.8 }, 0.5, 'ollama')).toBe(0.5);
  });

  it('§18.12: an empty provider part is an unscoped key whose substring keeps the colon', () => {
    expect(resolveModelThreshold('x:claude-3', { ':claude': 0.6 }, 0.5)).toBe(0.6);
    expect(resolveModelThreshold('x:claude-3', { ':claude': 0.6 }, 0.5, 'anything')).toBe(0.6);
    expect(resolveModelThreshold('claude-3', { ':claude': 0.6 }, 0.5)).toBe(0.5);
  });

  it('ignores a scoped key with an empty substring', () => {
    expect(resolveModelThreshold('claude-3', { 'anthropic:': 0.9 }, 0.5, 'anthropic')).toBe(0.5);
  });

  it('measures substring length in code points', () => {
    // '模型' is 2 code points, 'ab' is 2: equal length → first entry wins.
    expect(resolveModelThreshold('ab模型', { 模型: 0.6, ab: 0.7 }, 0.5)).toBe(0.6);
    // '😀' is 1 code point (2 UTF-16 units) and loses to the 2-code-point 'ab'.
    expect(resolveModelThreshold('ab😀', { '😀': 0.6, ab: 0.7 }, 0.5)).toBe(0.7);
  });
});

describe('computeThresholdTokens — SPEC §5.4', () => {
  it.each([
    [32000, 0.75, 27200],
    [64000, 0.75, 54400],
    [80000, 0.75, 64000],
    [100000, 0.75, 75000],
    [200000, 0.75, 150000],
    [64000, 0.5, 54400],
    [100000, 0.5, 64000],
    [128000, 0.5, 64000],
    [200000, 0.5, 100000],
    [10000, 0.75, 8500],
    [1000000, 0.5, 500000],
  ])('ctx %s at %s → %s', (ctx, pct, expected) => {
    expect(computeThresholdTokens(ctx, pct)).toBe(expected);
  });

  it('reserves max output tokens: 200,000 at 0.75 with 65,536 → 100,848 (eff 134,464)', () => {
    expect(computeThresholdTokens(200000, 0.75, 65536)).toBe(100848);
  });

  it('ignores a reservation that leaves no positive window', () => {
    expect(computeThresholdTokens(200000, 0.75, 200000)).toBe(150000);
    expect(computeThresholdTokens(200000, 0.75, 250000)).toBe(150000);
  });

  it.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('§18.12: ignores maxOutputTokens %s', (mot) => {
    expect(computeThresholdTokens(200000, 0.75, mot)).toBe(150000);
  });

  it('keeps the result below the window: percent 1 on 1,000,000 → 850,000', () => {
    expect(computeThresholdTokens(1000000, 1)).toBe(850000);
  });

  it('is defined for tiny windows (the formula gives 0 for a 1-token window)', () => {
    expect(computeThresholdTokens(1, 0.5)).toBe(0);
    expect(computeThresholdTokens(2, 0.5)).toBe(1);
    expect(computeThresholdTokens(100, 0.5)).toBe(85);
  });

  it('always returns 1 ≤ t < eff for eff ≥ 2', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 5_000_000 }), fc.double({ min: 0.01, max: 1, noNaN: true }), (ctx, pct) => {
        const t = computeThresholdTokens(ctx, pct);
        expect(Number.isInteger(t)).toBe(true);
        expect(t).toBeGreaterThanOrEqual(1);
        expect(t).toBeLessThan(ctx);
      }),
    );
  });
});

describe('deriveThresholds — SPEC §5.6 worked table (defaults: floor 0.75)', () => {
  it.each([
    [32000, 0.75, 27200],
    [64000, 0.75, 54400],
    [80000, 0.75, 64000],
    [100000, 0.75, 75000],
    [128000, 0.75, 96000],
    [200000, 0.75, 150000],
    [262144, 0.75, 196608],
    [511999, 0.75, 383999],
    [512000, 0.5, 256000],
    [1000000, 0.5, 500000],
    [1050000, 0.5, 525000],
  ])('ctx %s → pct %s, %s tokens', (ctx, pct, tokens) => {
    expect(derive(ctx)).toEqual({ thresholdPercent: pct, thresholdTokens: tokens });
  });

  it('200,000 with max output 65,536 → 100,848 at the effective percent', () => {
    const { thresholdPercent } = derive(200000);
    expect(computeThresholdTokens(200000, thresholdPercent, 65536)).toBe(100848);
  });

  it.each(['gpt-5.4', 'gpt-5.6-sol', 'gpt-5.4-mini'])('272,000 %s on Codex → 0.75, 204,000', (model) => {
    expect(derive(272000, DEFAULTS, model, 'openai-codex')).toEqual({
      thresholdPercent: 0.75,
      thresholdTokens: 204000,
    });
  });

  it('272,000 gpt-5.5 on Codex (autoraise) → 0.85, 231,200', () => {
    expect(derive(272000, DEFAULTS, 'gpt-5.5', 'openai-codex')).toEqual({
      thresholdPercent: 0.85,
      thresholdTokens: 231200,
    });
  });

  it('900,000 -900k alias → 0.50, 450,000', () => {
    expect(derive(900000, DEFAULTS, 'gpt-5.4-900k', 'openai-codex')).toEqual({
      thresholdPercent: 0.5,
      thresholdTokens: 450000,
    });
  });
});

describe('deriveThresholds — SPEC §5.6 with small_context_floor 0', () => {
  it.each([
    [64000, 54400],
    [100000, 64000],
    [128000, 64000],
    [200000, 100000],
  ])('ctx %s → pct 0.50, %s tokens', (ctx, tokens) => {
    expect(derive(ctx, FLOOR_OFF)).toEqual({ thresholdPercent: 0.5, thresholdTokens: tokens });
  });

  it('272,000 gpt-5.5 on Codex with autoraise off → 0.50, 136,000', () => {
    const config = normalizeCompressionConfig({ smallContextFloor: 0, codexGpt55Autoraise: false });
    expect(derive(272000, config, 'gpt-5.5', 'openai-codex')).toEqual({
      thresholdPercent: 0.5,
      thresholdTokens: 136000,
    });
  });
});

describe('deriveThresholds — order of §5.1', () => {
  it('§5.3: the floor only raises (0.40 → 0.75, 0.80 stays)', () => {
    const low = normalizeCompressionConfig({ modelThresholds: { claude: 0.4 } });
    const high = normalizeCompressionConfig({ modelThresholds: { claude: 0.8 } });
    expect(derive(200000, low, 'claude-3').thresholdPercent).toBe(0.75);
    expect(derive(200000, high, 'claude-3')).toEqual({ thresholdPercent: 0.8, thresholdTokens: 160000 });
  });

  it('§5.3: a window of exactly 512,000 keeps an override below the floor', () => {
    const low = normalizeCompressionConfig({ modelThresholds: { claude: 0.4 } });
    expect(derive(512000, low, 'claude-3')).toEqual({ thresholdPercent: 0.4, thresholdTokens: 204800 });
  });

  it('a model that matches no override key uses the global threshold', () => {
    const config = normalizeCompressionConfig({ threshold: 0.6, modelThresholds: { claude: 0.9 } });
    expect(derive(1000000, config, 'gpt-5.5').thresholdPercent).toBe(0.6);
    expect(derive(1000000, config, 'claude-3').thresholdPercent).toBe(0.9);
  });

  it('§4.5: the autoraise applies after the override and only raises', () => {
    const override = normalizeCompressionConfig({ modelThresholds: { 'gpt-5.5': 0.9 } });
    expect(derive(272000, override, 'gpt-5.5', 'openai-codex').thresholdPercent).toBe(0.9);
    const low = normalizeCompressionConfig({ smallContextFloor: 0, modelThresholds: { 'gpt-5.5': 0.3 } });
    expect(derive(272000, low, 'gpt-5.5', 'openai-codex').thresholdPercent).toBe(0.85);
  });

  it('§4.5: the autoraise is for the Codex route only', () => {
    expect(derive(1050000, DEFAULTS, 'gpt-5.5', 'openrouter')).toEqual({
      thresholdPercent: 0.5,
      thresholdTokens: 525000,
    });
    expect(derive(400000, FLOOR_OFF, 'gpt-5.5', 'copilot').thresholdPercent).toBe(0.5);
    expect(derive(272000, FLOOR_OFF, 'openai/gpt-5.5', 'openai-codex').thresholdPercent).toBe(0.85);
  });

  it('§4.6: 128,000 → 1,000,000 → 200,000 gives 96,000 → 500,000 → 150,000 (from the raw config)', () => {
    const sequence = [128000, 1000000, 200000].map((ctx) => derive(ctx, DEFAULTS, 'claude-sonnet-4.6', 'anthropic'));
    expect(sequence.map((d) => d.thresholdTokens)).toEqual([96000, 500000, 150000]);
    expect(sequence.map((d) => d.thresholdPercent)).toEqual([0.75, 0.5, 0.75]);
  });
});

describe('deriveThresholds — §5.5 absolute cap on 200,000', () => {
  it.each([
    [50000, 50000],
    [500000, 150000],
    [0, 150000],
    [-1, 150000],
    [null, 150000],
  ])('threshold_tokens %s → %s', (cap, expected) => {
    expect(derive(200000, normalizeCompressionConfig({ thresholdTokens: cap })).thresholdTokens).toBe(expected);
  });

  it('programmatic "abc" is ignored → 150,000', () => {
    expect(derive(200000, normalizeCompressionConfig({ thresholdTokens: 'abc' })).thresholdTokens).toBe(150000);
  });

  it('the cap never lifts the threshold and t never exceeds ctx', () => {
    const config = normalizeCompressionConfig({ thresholdTokens: 10 });
    expect(derive(200000, config).thresholdTokens).toBe(10);
    expect(derive(2, DEFAULTS).thresholdTokens).toBe(1);
    expect(derive(100, normalizeCompressionConfig({ thresholdTokens: 500 })).thresholdTokens).toBe(85);
  });
});
