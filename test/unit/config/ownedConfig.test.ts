import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_COMPRESSION_CONFIG, normalizeCompressionConfig } from '../../../engine/config.js';
import {
  compressionConfigToSnakeCase,
  validateCompressionOverrides,
} from '../../../infra/config/compressionSection.js';
import { parseOwnedConfig } from '../../../infra/config/ownedConfig.js';

// Strict start-up validation of config.yaml (SPEC §2.1–§2.3, §19); the programmatic, lenient side is
// test/unit/engine/config.test.ts.

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

describe('parseOwnedConfig — strict config.yaml validation (SPEC §2.1–§2.3)', () => {
  it('gives every default for an empty file', () => {
    const expected = {
      compression: { ...DEFAULT_COMPRESSION_CONFIG },
      // SPEC §19 host policy defaults.
      hostPolicy: {
        background: true,
        maxAutoPerHour: 6,
        tenantMaxAutoPerHour: null,
        fixedPointSimilarity: 0.95,
        minGainTokens: 1,
        summaryBackend: 'local',
        archivePointer: true,
        rehydratePinned: false,
      },
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
      compression: {
        threshold: 0.6,
        background: false,
        max_auto_per_hour: 3,
        tenant_max_auto_per_hour: 40,
        min_gain_tokens: 500,
        summary_backend: 'extractive',
        archive_pointer: false,
        rehydrate_pinned: true,
      },
    });
    expect(parsed.hostPolicy).toEqual({
      background: false,
      maxAutoPerHour: 3,
      tenantMaxAutoPerHour: 40,
      fixedPointSimilarity: 0.95,
      minGainTokens: 500,
      summaryBackend: 'extractive',
      archivePointer: false,
      rehydratePinned: true,
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
    expect(configError(() => parseOwnedConfig({ compression: { background: 'yes' } })).message).toBe(
      'Invalid configuration: compression.background: expected boolean, got "yes"',
    );
    expect(configError(() => parseOwnedConfig({ compression: { min_gain_tokens: -1 } })).message).toBe(
      'Invalid configuration: compression.min_gain_tokens: expected integer ≥ 0, got -1',
    );
    expect(configError(() => parseOwnedConfig({ compression: { archive_pointer: 1 } })).message).toBe(
      'Invalid configuration: compression.archive_pointer: expected boolean, got 1',
    );
    expect(parseOwnedConfig({ compression: { summary_backend: 'anthropic_native' } }).hostPolicy.summaryBackend).toBe(
      'anthropic_native',
    );
    expect(configError(() => parseOwnedConfig({ compression: { summary_backend: 'openai_native' } })).message).toBe(
      'Invalid configuration: compression.summary_backend: expected local, extractive or anthropic_native, got "openai_native"',
    );
  });
});
