import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CompressionConfig,
  DEFAULT_COMPRESSION_CONFIG,
  normalizeCompressionConfig,
  normalizeHostPolicy,
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

describe('SPEC §19 host policy keys, programmatically', () => {
  it('normalizeHostPolicy is lenient: bad values take their default', () => {
    expect(
      normalizeHostPolicy({
        background: 'no',
        maxAutoPerHour: 'x',
        minGainTokens: 7,
        fixedPointSimilarity: 0,
        summaryBackend: 'provider_native',
        archivePointer: false,
        rehydratePinned: 'yes',
      }),
    ).toEqual({
      background: true,
      maxAutoPerHour: 6,
      tenantMaxAutoPerHour: null,
      fixedPointSimilarity: 0.95,
      minGainTokens: 7,
      summaryBackend: 'local',
      archivePointer: false,
      rehydratePinned: false,
    });
  });

  it('normalizeHostPolicy never throws and always yields a valid policy', () => {
    const hostKeys = [
      'background',
      'maxAutoPerHour',
      'tenantMaxAutoPerHour',
      'fixedPointSimilarity',
      'minGainTokens',
      'summaryBackend',
      'archivePointer',
      'rehydratePinned',
    ];
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...hostKeys, 'other'), fc.anything()), (partial) => {
        const policy = normalizeHostPolicy(partial);
        expect(Object.keys(policy)).toEqual(hostKeys);
        expect(policy.fixedPointSimilarity > 0 && policy.fixedPointSimilarity <= 1).toBe(true);
        expect(Number.isInteger(policy.minGainTokens) && policy.minGainTokens >= 0).toBe(true);
        expect(['local', 'extractive']).toContain(policy.summaryBackend);
        expect(typeof policy.archivePointer).toBe('boolean');
        expect(typeof policy.rehydratePinned).toBe('boolean');
        for (const limit of [policy.maxAutoPerHour, policy.tenantMaxAutoPerHour]) {
          expect(limit === null || (Number.isInteger(limit) && limit >= 1)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});
