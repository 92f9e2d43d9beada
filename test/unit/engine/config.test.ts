import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CompressionConfig,
  ConfigError,
  compressionConfigToSnakeCase,
  DEFAULT_COMPRESSION_CONFIG,
  normalizeCompressionConfig,
  normalizeHostPolicy,
  parseOwnedConfig,
  validateCompressionOverrides,
} from '../../../engine/config.js';

const TWENTY_KEYS = [
  'enabled',
  'threshold',
  'modelThresholds',
  'smallContextFloor',
  'thresholdTokens',
  'targetRatio',
  'tailMode',
  'protectFirstN',
  'protectLastN',
  'minTailUserMessages',
  'inPlace',
  'abortOnSummaryFailure',
  'hygieneHardMessageLimit',
  'summaryTimeoutSeconds',
  'compactionCeilingSeconds',
  'codexGpt55Autoraise',
  'codexGpt55AutoraiseNotice',
  'codexAppServerAuto',
  'codexResponsesNative',
  'codexResponsesCompactThreshold',
];

const SPEC_DEFAULTS: CompressionConfig = {
  enabled: true,
  threshold: 0.5,
  modelThresholds: {},
  smallContextFloor: 0.75,
  thresholdTokens: null,
  targetRatio: 0.2,
  tailMode: 'lean',
  protectFirstN: 3,
  protectLastN: 20,
  minTailUserMessages: 1,
  inPlace: true,
  abortOnSummaryFailure: false,
  hygieneHardMessageLimit: 5000,
  summaryTimeoutSeconds: 120,
  compactionCeilingSeconds: 600,
  codexGpt55Autoraise: true,
  codexGpt55AutoraiseNotice: true,
  codexAppServerAuto: 'native',
  codexResponsesNative: false,
  codexResponsesCompactThreshold: 200000,
};

/** Runs `fn` and returns the ConfigError it throws. */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('CompressionConfig defaults (SPEC §2.2, §17.1)', () => {
  it('has exactly the twenty camelCase keys with the spec defaults', () => {
    expect(Object.keys(DEFAULT_COMPRESSION_CONFIG).sort()).toEqual([...TWENTY_KEYS].sort());
    expect({ ...DEFAULT_COMPRESSION_CONFIG }).toEqual(SPEC_DEFAULTS);
  });

  it('normalises a missing config to a fresh copy of the defaults', () => {
    const a = normalizeCompressionConfig();
    const b = normalizeCompressionConfig();
    expect(a).toEqual(SPEC_DEFAULTS);
    expect(a.modelThresholds).not.toBe(b.modelThresholds);
    a.modelThresholds.x = 0.9;
    expect(normalizeCompressionConfig().modelThresholds).toEqual({});
  });
});

describe('normalizeCompressionConfig — lenient programmatic rules (SPEC §2.1)', () => {
  it('keeps valid values', () => {
    const config = normalizeCompressionConfig({
      threshold: 0.6,
      smallContextFloor: 0,
      thresholdTokens: 50000,
      tailMode: 'legacy',
      protectFirstN: 0,
      protectLastN: 1,
      inPlace: false,
      codexAppServerAuto: 'off',
      codexResponsesCompactThreshold: 1,
    });
    expect(config).toMatchObject({
      threshold: 0.6,
      smallContextFloor: 0,
      thresholdTokens: 50000,
      tailMode: 'legacy',
      protectFirstN: 0,
      protectLastN: 1,
      inPlace: false,
      codexAppServerAuto: 'off',
      codexResponsesCompactThreshold: 1,
    });
  });

  it.each([
    ['threshold', 0],
    ['threshold', 1.5],
    ['threshold', '0.5'],
    ['threshold', Number.NaN],
    ['threshold', null],
    ['smallContextFloor', -0.1],
    ['smallContextFloor', 1.01],
    ['thresholdTokens', 'abc'],
    ['thresholdTokens', 1.5],
    ['targetRatio', 'x'],
    ['targetRatio', Number.POSITIVE_INFINITY],
    ['tailMode', 'LEAN'],
    ['protectFirstN', -1],
    ['protectFirstN', 2.5],
    ['protectLastN', 0],
    ['minTailUserMessages', -1],
    ['enabled', 'yes'],
    ['enabled', 1],
    ['inPlace', 'false'],
    ['hygieneHardMessageLimit', 3],
    ['summaryTimeoutSeconds', 0],
    ['compactionCeilingSeconds', -5],
    ['codexAppServerAuto', 'auto'],
    ['codexResponsesNative', null],
    ['codexResponsesCompactThreshold', 0],
    ['modelThresholds', [0.5]],
    ['modelThresholds', 'claude'],
  ] as const)('%s = %j is replaced by its default', (key, value) => {
    const config = normalizeCompressionConfig({ [key]: value });
    expect(config[key]).toEqual(SPEC_DEFAULTS[key]);
  });

  it.each([
    [0.05, 0.1],
    [0.95, 0.8],
    [0.1, 0.1],
    [0.8, 0.8],
    [0.33, 0.33],
    [-3, 0.1],
  ])('clamps targetRatio %s to %s', (input, expected) => {
    expect(normalizeCompressionConfig({ targetRatio: input }).targetRatio).toBe(expected);
  });

  it('accepts thresholdTokens integers ≤ 0 (meaning no cap) and null', () => {
    expect(normalizeCompressionConfig({ thresholdTokens: 0 }).thresholdTokens).toBe(0);
    expect(normalizeCompressionConfig({ thresholdTokens: -1 }).thresholdTokens).toBe(-1);
    expect(normalizeCompressionConfig({ thresholdTokens: null }).thresholdTokens).toBeNull();
  });

  it('keeps modelThresholds entries as-is, in order, including bad values', () => {
    const input = { claude: 'high', cl: 0.6, big: 7 };
    const config = normalizeCompressionConfig({ modelThresholds: input });
    expect(config.modelThresholds).toEqual(input);
    expect(Object.keys(config.modelThresholds)).toEqual(['claude', 'cl', 'big']);
    expect(config.modelThresholds).not.toBe(input);
  });

  it.each([null, 5, 'x', [], true])('treats a non-object config %j as empty', (input) => {
    expect(normalizeCompressionConfig(input)).toEqual(SPEC_DEFAULTS);
  });

  it('ignores unknown and snake_case keys', () => {
    expect(normalizeCompressionConfig({ treshold: 0.9, small_context_floor: 0 })).toEqual(SPEC_DEFAULTS);
  });

  it('never throws and always yields a valid config', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...TWENTY_KEYS, 'other'), fc.anything()), (partial) => {
        const config = normalizeCompressionConfig(partial);
        expect(Object.keys(config).sort()).toEqual([...TWENTY_KEYS].sort());
        expect(config.threshold > 0 && config.threshold <= 1).toBe(true);
        expect(config.targetRatio >= 0.1 && config.targetRatio <= 0.8).toBe(true);
        expect(typeof config.enabled).toBe('boolean');
        expect(['lean', 'legacy']).toContain(config.tailMode);
        expect(Number.isInteger(config.protectLastN) && config.protectLastN >= 1).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('parseOwnedConfig — strict config.yaml validation (SPEC §2.1–§2.3)', () => {
  it('gives every default for an empty file', () => {
    const expected = {
      compression: SPEC_DEFAULTS,
      // SPEC §19 host policy defaults.
      hostPolicy: { maxAutoPerHour: 6, tenantMaxAutoPerHour: null, fixedPointSimilarity: 0.95, minGainTokens: 1 },
      auxiliary: { model: null, provider: 'auto', baseUrl: null, timeout: null },
      promptCaching: { cacheTtl: '5m' },
      context: { engine: 'compressor' },
      model: { contextLength: null },
    };
    expect(parseOwnedConfig({})).toEqual(expected);
    expect(parseOwnedConfig(null)).toEqual(expected);
    expect(parseOwnedConfig({ compression: null, prompt_caching: null, context: null })).toEqual(expected);
  });

  it('reads every owned key in snake_case', () => {
    const parsed = parseOwnedConfig({
      compression: {
        enabled: false,
        threshold: 0.6,
        model_thresholds: { 'openrouter:claude': 0.9, gpt: 7 },
        small_context_floor: 0,
        threshold_tokens: -1,
        target_ratio: 0.05,
        tail_mode: 'legacy',
        protect_first_n: 0,
        protect_last_n: 1,
        min_tail_user_messages: 0,
        in_place: false,
        abort_on_summary_failure: true,
        hygiene_hard_message_limit: 4,
        summary_timeout_seconds: 0.5,
        compaction_ceiling_seconds: 30,
        codex_gpt55_autoraise: false,
        codex_gpt55_autoraise_notice: false,
        codex_app_server_auto: 'hermes',
        codex_responses_native: true,
        codex_responses_compact_threshold: 150000,
      },
      auxiliary: {
        compression: { model: 'gpt-5.4-mini', provider: 'main', base_url: 'http://localhost:8080/v1', timeout: 30 },
        vision: { anything: 'goes' },
      },
      prompt_caching: { cache_ttl: '1h' },
      context: { engine: 'my_engine-2' },
      model: { context_length: 128000, default: 'claude-sonnet-4.6', provider: 'anthropic' },
      agent: { max_turns: 'not validated here' },
    });
    expect(parsed.compression).toEqual({
      enabled: false,
      threshold: 0.6,
      modelThresholds: { 'openrouter:claude': 0.9, gpt: 7 },
      smallContextFloor: 0,
      thresholdTokens: -1,
      targetRatio: 0.1,
      tailMode: 'legacy',
      protectFirstN: 0,
      protectLastN: 1,
      minTailUserMessages: 0,
      inPlace: false,
      abortOnSummaryFailure: true,
      hygieneHardMessageLimit: 4,
      summaryTimeoutSeconds: 0.5,
      compactionCeilingSeconds: 30,
      codexGpt55Autoraise: false,
      codexGpt55AutoraiseNotice: false,
      codexAppServerAuto: 'hermes',
      codexResponsesNative: true,
      codexResponsesCompactThreshold: 150000,
    });
    expect(parsed.auxiliary).toEqual({
      model: 'gpt-5.4-mini',
      provider: 'main',
      baseUrl: 'http://localhost:8080/v1',
      timeout: 30,
    });
    expect(parsed.promptCaching).toEqual({ cacheTtl: '1h' });
    expect(parsed.context).toEqual({ engine: 'my_engine-2' });
    expect(parsed.model).toEqual({ contextLength: 128000 });
  });

  it.each([
    [null, null],
    [false, null],
    ['', null],
    ['5m', '5m'],
    ['1h', '1h'],
  ])('prompt_caching.cache_ttl %j → %j', (value, expected) => {
    expect(parseOwnedConfig({ prompt_caching: { cache_ttl: value } }).promptCaching.cacheTtl).toBe(expected);
  });

  it('accepts null where the Allowed column says so', () => {
    const parsed = parseOwnedConfig({
      compression: { threshold_tokens: null },
      auxiliary: { compression: { model: null, base_url: null, timeout: null } },
      model: { context_length: null },
    });
    expect(parsed.compression.thresholdTokens).toBeNull();
    expect(parsed.auxiliary).toEqual({ model: null, provider: 'auto', baseUrl: null, timeout: null });
    expect(parsed.model.contextLength).toBeNull();
  });

  it.each([
    [{ compression: { treshold: 0.5 } }, 'compression.treshold'],
    [{ compression: { threshold: 0.5, smallContextFloor: 0 } }, 'compression.smallContextFloor'],
    [{ auxiliary: { compression: { modle: 'x' } } }, 'auxiliary.compression.modle'],
    [{ prompt_caching: { ttl: '5m' } }, 'prompt_caching.ttl'],
    [{ context: { engine: 'compressor', plugin: 'x' } }, 'context.plugin'],
  ])('rejects an unknown key: %j', (config, key) => {
    const error = configError(() => parseOwnedConfig(config));
    expect(error.message).toBe(`Invalid configuration: ${key}: unknown key`);
    expect(error.key).toBe(key);
    expect(error.name).toBe('ConfigError');
  });

  it.each([
    [{ compression: { threshold: 1.5 } }, 'compression.threshold: expected number in (0, 1], got 1.5'],
    [{ compression: { threshold: 0 } }, 'compression.threshold: expected number in (0, 1], got 0'],
    [{ compression: { threshold: '0.5' } }, 'compression.threshold: expected number in (0, 1], got "0.5"'],
    [{ compression: { threshold: null } }, 'compression.threshold: expected number in (0, 1], got null'],
    [{ compression: { enabled: 'yes' } }, 'compression.enabled: expected boolean, got "yes"'],
    [{ compression: { in_place: 1 } }, 'compression.in_place: expected boolean, got 1'],
    [
      { compression: { codex_responses_native: null } },
      'compression.codex_responses_native: expected boolean, got null',
    ],
    [
      { compression: { small_context_floor: 1.2 } },
      'compression.small_context_floor: expected number in [0, 1], got 1.2',
    ],
    [{ compression: { threshold_tokens: 1.5 } }, 'compression.threshold_tokens: expected null or integer, got 1.5'],
    [{ compression: { threshold_tokens: 'abc' } }, 'compression.threshold_tokens: expected null or integer, got "abc"'],
    [{ compression: { target_ratio: '0.2' } }, 'compression.target_ratio: expected number, got "0.2"'],
    [{ compression: { tail_mode: 'fat' } }, 'compression.tail_mode: expected lean or legacy, got "fat"'],
    [{ compression: { protect_first_n: -1 } }, 'compression.protect_first_n: expected integer ≥ 0, got -1'],
    [{ compression: { protect_first_n: 2.5 } }, 'compression.protect_first_n: expected integer ≥ 0, got 2.5'],
    [{ compression: { protect_last_n: 0 } }, 'compression.protect_last_n: expected integer ≥ 1, got 0'],
    [
      { compression: { min_tail_user_messages: '1' } },
      'compression.min_tail_user_messages: expected integer ≥ 0, got "1"',
    ],
    [
      { compression: { hygiene_hard_message_limit: 3 } },
      'compression.hygiene_hard_message_limit: expected integer ≥ 4, got 3',
    ],
    [
      { compression: { summary_timeout_seconds: 0 } },
      'compression.summary_timeout_seconds: expected number > 0, got 0',
    ],
    [
      { compression: { compaction_ceiling_seconds: -1 } },
      'compression.compaction_ceiling_seconds: expected number > 0, got -1',
    ],
    [
      { compression: { codex_app_server_auto: 'on' } },
      'compression.codex_app_server_auto: expected native, hermes or off, got "on"',
    ],
    [
      { compression: { codex_responses_compact_threshold: 0 } },
      'compression.codex_responses_compact_threshold: expected integer > 0, got 0',
    ],
    [
      { compression: { model_thresholds: { claude: 'high' } } },
      'compression.model_thresholds: expected map of string → number (a number outside (0, 1] is accepted and ignored, §5.2), got {"claude":"high"}',
    ],
    [
      { compression: { model_thresholds: null } },
      'compression.model_thresholds: expected map of string → number (a number outside (0, 1] is accepted and ignored, §5.2), got null',
    ],
    [{ compression: 5 }, 'compression: expected mapping, got 5'],
    [
      { auxiliary: { compression: { model: '' } } },
      'auxiliary.compression.model: expected null or non-empty string, got ""',
    ],
    [
      { auxiliary: { compression: { provider: null } } },
      'auxiliary.compression.provider: expected non-empty string, got null',
    ],
    [
      { auxiliary: { compression: { base_url: 'not a url' } } },
      'auxiliary.compression.base_url: expected null or URL string, got "not a url"',
    ],
    [
      { auxiliary: { compression: { timeout: 0 } } },
      'auxiliary.compression.timeout: expected null or number > 0, got 0',
    ],
    [
      { prompt_caching: { cache_ttl: '2h' } },
      'prompt_caching.cache_ttl: expected "5m", "1h", or a falsy value (null, false, ""), got "2h"',
    ],
    [
      { prompt_caching: { cache_ttl: true } },
      'prompt_caching.cache_ttl: expected "5m", "1h", or a falsy value (null, false, ""), got true',
    ],
    [
      { context: { engine: 'My Engine' } },
      'context.engine: expected string matching ^[a-z0-9][a-z0-9_-]{0,63}$, got "My Engine"',
    ],
    [{ context: { engine: null } }, 'context.engine: expected string matching ^[a-z0-9][a-z0-9_-]{0,63}$, got null'],
    [{ model: { context_length: 0 } }, 'model.context_length: expected null or integer > 0, got 0'],
    [{ model: { context_length: '128k' } }, 'model.context_length: expected null or integer > 0, got "128k"'],
  ])('rejects a bad value: %j', (config, text) => {
    const error = configError(() => parseOwnedConfig(config));
    expect(error.message).toBe(`Invalid configuration: ${text}`);
    expect(error.key).toBe(text.slice(0, text.indexOf(':')));
  });

  it('does not validate sections and keys it does not own', () => {
    const parsed = parseOwnedConfig({
      model: 'a plain string model section',
      auxiliary: { vision: { provider: null } },
      terminal: { backend: 42 },
    });
    expect(parsed.model.contextLength).toBeNull();
    expect(parsed.auxiliary.provider).toBe('auto');
  });
});

describe('validateCompressionOverrides (per-tenant policy)', () => {
  it('returns only the given keys, camelCased, with target_ratio clamped', () => {
    expect(validateCompressionOverrides({ threshold: 0.6, tail_mode: 'legacy', target_ratio: 0.95 })).toEqual({
      threshold: 0.6,
      tailMode: 'legacy',
      targetRatio: 0.8,
    });
    expect(validateCompressionOverrides(null)).toEqual({});
    expect(validateCompressionOverrides(undefined)).toEqual({});
  });

  it('names keys under the given prefix', () => {
    expect(configError(() => validateCompressionOverrides({ treshold: 1 }, 'tenant.policy')).message).toBe(
      'Invalid configuration: tenant.policy.treshold: unknown key',
    );
    expect(configError(() => validateCompressionOverrides({ enabled: 'no' }, 'tenant.policy')).message).toBe(
      'Invalid configuration: tenant.policy.enabled: expected boolean, got "no"',
    );
  });

  it('round-trips a full config through snake_case', () => {
    const config = normalizeCompressionConfig({ threshold: 0.7, modelThresholds: { claude: 0.6 }, tailMode: 'legacy' });
    const snake = compressionConfigToSnakeCase(config);
    expect(Object.keys(snake)).toContain('codex_gpt55_autoraise_notice');
    expect(Object.keys(snake)).toContain('protect_first_n');
    expect(validateCompressionOverrides(snake)).toEqual(config);
  });
});

describe('SPEC §19 host policy keys of the compression section', () => {
  it('are read from config.yaml beside the engine keys, which they do not enter', () => {
    const parsed = parseOwnedConfig({
      compression: { threshold: 0.6, max_auto_per_hour: 3, tenant_max_auto_per_hour: 40, min_gain_tokens: 500 },
    });
    expect(parsed.hostPolicy).toEqual({
      maxAutoPerHour: 3,
      tenantMaxAutoPerHour: 40,
      fixedPointSimilarity: 0.95,
      minGainTokens: 500,
    });
    expect(parsed.compression.threshold).toBe(0.6);
    expect(Object.keys(parsed.compression)).toHaveLength(20);
  });

  it('accept null where §19 allows it and name the key on a bad value', () => {
    expect(parseOwnedConfig({ compression: { max_auto_per_hour: null } }).hostPolicy.maxAutoPerHour).toBeNull();
    expect(configError(() => parseOwnedConfig({ compression: { max_auto_per_hour: 0 } })).message).toBe(
      'Invalid configuration: compression.max_auto_per_hour: expected integer ≥ 1, or null (no limit), got 0',
    );
    expect(configError(() => parseOwnedConfig({ compression: { fixed_point_similarity: 1.5 } })).message).toBe(
      'Invalid configuration: compression.fixed_point_similarity: expected number in (0, 1], got 1.5',
    );
    expect(configError(() => parseOwnedConfig({ compression: { min_gain_tokens: -1 } })).message).toBe(
      'Invalid configuration: compression.min_gain_tokens: expected integer ≥ 0, got -1',
    );
  });

  it('normalizeHostPolicy is lenient: bad values take their default', () => {
    expect(normalizeHostPolicy({ maxAutoPerHour: 'x', minGainTokens: 7, fixedPointSimilarity: 0 })).toEqual({
      maxAutoPerHour: 6,
      tenantMaxAutoPerHour: null,
      fixedPointSimilarity: 0.95,
      minGainTokens: 7,
    });
  });
});
