import { describe, expect, it } from 'vitest';
import { normalizeCompressionConfig } from '../../../engine/config.js';
import {
  baseModelName,
  ContextWindowTooSmallError,
  checkMinimumContextLength,
  codexAutoraiseApplies,
  DEFAULT_MODEL_REGISTRY,
  formatThousands,
  lookupContextLength,
  ModelNotAvailableError,
  type ModelRegistryTable,
  resolveContextLength,
  resolveModelAlias,
  resolveUsableContextLength,
} from '../../../engine/modelRegistry.js';
import { deriveThresholds } from '../../../engine/thresholds.js';

describe('registry table — SPEC §4.2', () => {
  it('contains the required entries in order', () => {
    expect(DEFAULT_MODEL_REGISTRY.slice(0, 5)).toEqual([
      { key: 'openai-codex:gpt-5.5', contextLength: 272000 },
      { key: 'openai-codex:gpt-5.4', contextLength: 272000 },
      { key: 'openai-codex:gpt-5.6', contextLength: 272000 },
      { key: 'copilot:gpt-5.5', contextLength: 400000 },
      { key: 'gpt-5.5', contextLength: 1050000 },
    ]);
  });

  it.each([
    ['gpt-5.5', 'openai-codex', 272000],
    ['gpt-5.4', 'openai-codex', 272000],
    ['gpt-5.4-mini', 'openai-codex', 272000],
    ['gpt-5.6-sol', 'openai-codex', 272000],
    ['gpt-5.6-terra', 'openai-codex', 272000],
    ['gpt-5.6-luna', 'openai-codex', 272000],
    ['gpt-5.5', 'copilot', 400000],
    ['gpt-5.5', 'openai', 1050000],
    ['openai/gpt-5.5', 'openrouter', 1050000],
    ['GPT-5.5', 'OpenAI-Codex', 272000],
    ['gpt-5.5', undefined, 1050000],
    ['gpt-5.4', 'openai', null],
    ['claude-sonnet-4.6', 'anthropic', null],
    ['', 'openai', null],
  ])('%s on %s → %s', (model, provider, expected) => {
    expect(lookupContextLength(model, provider)).toBe(expected);
  });

  it('uses the §5.2 tie-breaking on an extended table', () => {
    const table: ModelRegistryTable = [
      { key: 'sonnet', contextLength: 100000 },
      { key: 'claude', contextLength: 200000 },
      { key: 'claude-sonnet', contextLength: 300000 },
      { key: 'acme:claude', contextLength: 400000 },
      { key: 'broken', contextLength: -1 },
    ];
    expect(lookupContextLength('claude-sonnet-4', undefined, table)).toBe(300000);
    expect(lookupContextLength('claude-3', 'acme', table)).toBe(400000);
    expect(lookupContextLength('claude-3', 'other', table)).toBe(200000);
    expect(lookupContextLength('sonnet-claude', undefined, table)).toBe(100000);
    expect(lookupContextLength('broken-model', undefined, table)).toBeNull();
  });
});

describe('-900k aliases — SPEC §4.3', () => {
  it.each([
    ['gpt-5.4-900k', 'gpt-5.4'],
    ['gpt-5.6-sol-900k', 'gpt-5.6-sol'],
    ['gpt-5.6-terra-900k', 'gpt-5.6-terra'],
    ['gpt-5.6-luna-900k', 'gpt-5.6-luna'],
  ])('%s is sent as %s with a 900,000 window', (alias, sendAs) => {
    expect(resolveModelAlias(alias)).toEqual({ requested: alias, sendAs, contextLength: 900000 });
  });

  it.each([
    ['gpt-5.5-900k', 'gpt-5.5'],
    ['gpt-5.4-mini-900k', 'gpt-5.4-mini'],
    ['claude-900k', 'claude'],
  ])('rejects %s', (requested, base) => {
    expect(() => resolveModelAlias(requested)).toThrow(ModelNotAvailableError);
    expect(() => resolveModelAlias(requested)).toThrow(
      `Model '${requested}' is not available: '${base}' has no -900k variant.`,
    );
  });

  it('passes ordinary models through', () => {
    expect(resolveModelAlias('gpt-5.4')).toEqual({ requested: 'gpt-5.4', sendAs: 'gpt-5.4', contextLength: null });
  });

  it('thresholds follow the window: alias 450,000; Codex base 204,000', () => {
    const config = normalizeCompressionConfig();
    const alias = resolveContextLength({ model: 'gpt-5.4-900k', provider: 'openai-codex' });
    const base = resolveContextLength({ model: 'gpt-5.4', provider: 'openai-codex' });
    const t = (model: string, contextLength: number) =>
      deriveThresholds({ model, contextLength, provider: 'openai-codex', config }).thresholdTokens;
    expect(t('gpt-5.4-900k', alias.contextLength)).toBe(450000);
    expect(t('gpt-5.4', base.contextLength)).toBe(204000);
  });
});

describe('resolveContextLength — SPEC §4.1 order', () => {
  it('1. an explicit override wins, also over alias windows', () => {
    expect(resolveContextLength({ model: 'gpt-5.4-900k', provider: 'openai-codex', explicitOverride: 500000 })).toEqual(
      {
        contextLength: 500000,
        source: 'override',
      },
    );
    expect(resolveContextLength({ model: 'mystery', explicitOverride: 128000, providerMetadata: 64000 })).toEqual({
      contextLength: 128000,
      source: 'override',
    });
  });

  it('ignores a missing or non-positive override', () => {
    for (const explicitOverride of [null, undefined, 0, -5]) {
      expect(resolveContextLength({ model: 'gpt-5.5', provider: 'openai', explicitOverride }).source).toBe('registry');
    }
  });

  it('2. a -900k alias gives 900,000', () => {
    expect(
      resolveContextLength({ model: 'gpt-5.6-sol-900k', provider: 'openai-codex', providerMetadata: 272000 }),
    ).toEqual({
      contextLength: 900000,
      source: 'alias',
    });
  });

  it('3. provider metadata beats the registry', () => {
    expect(resolveContextLength({ model: 'gpt-5.5', provider: 'openai-codex', providerMetadata: 300000 })).toEqual({
      contextLength: 300000,
      source: 'provider',
    });
    expect(
      resolveContextLength({ model: 'gpt-5.5', provider: 'openai', providerMetadata: { 'gpt-5.5': 999000, other: 1 } }),
    ).toEqual({ contextLength: 999000, source: 'provider' });
    expect(resolveContextLength({ model: 'gpt-5.5', provider: 'openai', providerMetadata: { other: 1 } }).source).toBe(
      'registry',
    );
  });

  it('4. the registry, with an extended table', () => {
    expect(resolveContextLength({ model: 'gpt-5.5', provider: 'copilot' })).toEqual({
      contextLength: 400000,
      source: 'registry',
    });
    const table = [...DEFAULT_MODEL_REGISTRY, { key: 'claude', contextLength: 200000 }];
    expect(resolveContextLength({ model: 'claude-sonnet-4.6', provider: 'anthropic', table })).toEqual({
      contextLength: 200000,
      source: 'registry',
    });
  });

  it('5. falls back to 256,000 with the exact warning', () => {
    expect(resolveContextLength({ model: 'mystery-model', provider: 'openai' })).toEqual({
      contextLength: 256000,
      source: 'fallback',
      warning:
        "No context length known for model 'mystery-model'; assuming 256,000 tokens. Set model.context_length to override.",
    });
  });

  it('rejects a non-alias -900k id', () => {
    expect(() => resolveContextLength({ model: 'gpt-5.5-900k', provider: 'openai-codex' })).toThrow(
      "Model 'gpt-5.5-900k' is not available: 'gpt-5.5' has no -900k variant.",
    );
  });
});

describe('minimum context length — SPEC §4.4', () => {
  it('refuses windows below 64,000 with the exact message', () => {
    expect(() => checkMinimumContextLength('tiny-model', 32000)).toThrow(ContextWindowTooSmallError);
    expect(() => checkMinimumContextLength('tiny-model', 63999)).toThrow(
      "Model 'tiny-model' has a context window of 63,999 tokens; at least 64,000 are required. Choose a larger model or set model.context_length.",
    );
  });

  it('accepts 64,000 and more', () => {
    expect(() => checkMinimumContextLength('m', 64000)).not.toThrow();
    expect(() => checkMinimumContextLength('m', 1050000)).not.toThrow();
  });
});

describe('Codex gpt-5.5 autoraise predicate — SPEC §4.5', () => {
  it.each([
    ['gpt-5.5', 'gpt-5.5'],
    ['openai/GPT-5.5', 'gpt-5.5'],
    ['gpt-5.5-900k', 'gpt-5.5'],
    ['a/b/gpt-5.4-900K', 'gpt-5.4'],
    ['gpt-5.5-mini', 'gpt-5.5-mini'],
  ])('baseModelName(%s) = %s', (model, base) => {
    expect(baseModelName(model)).toBe(base);
  });

  const on = normalizeCompressionConfig();
  const off = normalizeCompressionConfig({ codexGpt55Autoraise: false });
  it.each([
    ['gpt-5.5', 'openai-codex', on, true],
    ['openai/gpt-5.5', 'openai-codex', on, true],
    ['gpt-5.5', 'openai-codex', off, false],
    ['gpt-5.5', 'openai', on, false],
    ['gpt-5.5', 'openrouter', on, false],
    ['gpt-5.5', undefined, on, false],
    ['gpt-5.5-mini', 'openai-codex', on, false],
    ['gpt-5.4', 'openai-codex', on, false],
  ] as const)('%s on %s → %s', (model, provider, config, expected) => {
    expect(codexAutoraiseApplies(model, provider, config)).toBe(expected);
  });
});

describe('formatThousands', () => {
  it.each([
    [0, '0'],
    [999, '999'],
    [1000, '1,000'],
    [64000, '64,000'],
    [231200, '231,200'],
    [1050000, '1,050,000'],
    [-1234567, '-1,234,567'],
  ])('%s → %s', (value, text) => {
    expect(formatThousands(value)).toBe(text);
  });
});

describe('resolveUsableContextLength (SPEC §4.1, §4.3, §4.4)', () => {
  it('resolves aliases, overrides and the registry', () => {
    expect(resolveUsableContextLength('gpt-5.4-900k', null, null)).toBe(900_000);
    expect(resolveUsableContextLength('gpt-5.5', 'openai-codex', null)).toBe(272_000);
    expect(resolveUsableContextLength('anything', null, 128_000)).toBe(128_000);
  });

  it('refuses a window below 64,000 and a -900k id without such a variant, with the exact texts', () => {
    expect(() => resolveUsableContextLength('tiny', null, 63_999)).toThrow(
      "Model 'tiny' has a context window of 63,999 tokens; at least 64,000 are required. Choose a larger model or set model.context_length.",
    );
    expect(() => resolveUsableContextLength('gpt-5.4-mini-900k', null, null)).toThrow(
      "Model 'gpt-5.4-mini-900k' is not available: 'gpt-5.4-mini' has no -900k variant.",
    );
  });
});
