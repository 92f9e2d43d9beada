// Configuration of the owned config.yaml sections (SPEC §2) as the engine sees it: the camelCase `CompressionConfig`
// (§17.1) and the host policy keys of §19, their defaults, the range of every value, and the lenient programmatic
// normalisation of §2.1 (never throws; §18.14 keeps it in engine/). Pure and without zod. The strict start-up
// validation of the snake_case config.yaml, whose errors name the key, belongs to the host: infra/config/.

export type TailMode = 'lean' | 'legacy';
export type CodexAppServerAuto = 'native' | 'hermes' | 'off';
export type CacheTtl = '5m' | '1h';

/** The twenty `compression.*` keys of SPEC §2.2 in camelCase (§17.1). */
export interface CompressionConfig {
  enabled: boolean;
  threshold: number;
  modelThresholds: Record<string, number>;
  smallContextFloor: number;
  /** Absolute cap of §5.5; `null` or an integer ≤ 0 means no cap. */
  thresholdTokens: number | null;
  targetRatio: number;
  tailMode: TailMode;
  protectFirstN: number;
  protectLastN: number;
  minTailUserMessages: number;
  inPlace: boolean;
  abortOnSummaryFailure: boolean;
  hygieneHardMessageLimit: number;
  summaryTimeoutSeconds: number;
  compactionCeilingSeconds: number;
  codexGpt55Autoraise: boolean;
  codexGpt55AutoraiseNotice: boolean;
  codexAppServerAuto: CodexAppServerAuto;
  codexResponsesNative: boolean;
  codexResponsesCompactThreshold: number;
}

/** SPEC §2.2 defaults. Frozen: callers copy it through `normalizeCompressionConfig`. */
export const DEFAULT_COMPRESSION_CONFIG: Readonly<CompressionConfig> = Object.freeze({
  enabled: true,
  threshold: 0.5,
  modelThresholds: Object.freeze({}) as Record<string, number>,
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
  codexResponsesCompactThreshold: 200_000,
});

export const TARGET_RATIO_MIN = 0.1;
export const TARGET_RATIO_MAX = 0.8;

/** SPEC §2.2 `target_ratio`: clamped to [0.10, 0.80]. */
export function clampTargetRatio(value: number): number {
  return Math.min(TARGET_RATIO_MAX, Math.max(TARGET_RATIO_MIN, value));
}

/** SPEC §2.3 `context.engine`; also the names `registerContextEngine` accepts (§18.11). */
export const CONTEXT_ENGINE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * A configuration error with the exact texts of SPEC §2.1 / §16.5. Thrown by the host's validators (config.yaml,
 * providers, tenant policy); defined here, beside the types it is about, so that activities and the gateway can
 * recognise it through the engine's index.
 */
export class ConfigError extends Error {
  readonly key: string;
  constructor(key: string, message: string) {
    super(message);
    this.name = 'ConfigError';
    this.key = key;
  }
  static unknownKey(key: string): ConfigError {
    return new ConfigError(key, `Invalid configuration: ${key}: unknown key`);
  }
  static badValue(key: string, expectation: string, value: unknown): ConfigError {
    return new ConfigError(key, `Invalid configuration: ${key}: expected ${expectation}, got ${describeValue(value)}`);
  }
}

function describeValue(value: unknown): string {
  const json = JSON.stringify(value);
  return json === undefined ? String(value) : json;
}

type PlainObject = Record<string, unknown>;

function isPlainObject(value: unknown): value is PlainObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Host policy keys of SPEC §19: more `compression.*` keys, read by the host (workflows, gateway), not by the engine
// of §17 (its CompressionConfig keeps exactly the twenty keys of §2.2). Validated like every key of §2.2.

export interface HostPolicy {
  /** Automatic in-loop compactions run in the background while the conversation goes on (hygiene, manual block). */
  background: boolean;
  /** Frequency breaker per conversation: automatic compactions in a rolling hour (null: no limit). */
  maxAutoPerHour: number | null;
  /** The same breaker across a tenant's conversations (null: off). */
  tenantMaxAutoPerHour: number | null;
  /** Fixed-point detector: a new summary at least this similar to the previous one, without new user input. */
  fixedPointSimilarity: number;
  /** Minimum-gain rule: a compaction saving fewer estimated tokens is not committed (a strike, §7.4). */
  minGainTokens: number;
  /**
   * Who writes Phase 3's summary: `local` the configured LLM summariser, `extractive` the deterministic extractive
   * summariser (engine/extractive/, no LLM), `anthropic_native` Anthropic's compaction block where the summary
   * route supports it (falling back to `local`).
   */
  summaryBackend: SummaryBackend;
  /** Every summary ends with one line saying that the earlier turns are archived and how to search them. */
  archivePointer: boolean;
  /** Operator-pinned messages a compaction summarised come back right after the summary (engine/rehydratePinned). */
  rehydratePinned: boolean;
}

/** SPEC §19 `summary_backend` values this host implements. */
export const SUMMARY_BACKENDS = ['local', 'extractive', 'anthropic_native'] as const;
export type SummaryBackend = (typeof SUMMARY_BACKENDS)[number];

/** SPEC §19 defaults. */
export const DEFAULT_HOST_POLICY: Readonly<HostPolicy> = Object.freeze({
  background: true,
  maxAutoPerHour: 6,
  tenantMaxAutoPerHour: null,
  fixedPointSimilarity: 0.95,
  minGainTokens: 1,
  summaryBackend: 'local',
  archivePointer: true,
  rehydratePinned: false,
});

// ---------------------------------------------------------------------------------------------------------------
// The range of every value (the "Allowed" columns of §2.2 and §19), defined once: the lenient normalisation below
// replaces a value outside it by the default, the strict config.yaml validation (infra/config/) rejects it.

/** True when a value lies in the allowed range of its key. */
export type ValueCheck = (value: unknown) => boolean;

/** A finite number (NaN and ±Infinity are not numbers in config.yaml). */
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isInteger = (value: unknown): value is number => Number.isSafeInteger(value);
const isBoolean: ValueCheck = (value) => typeof value === 'boolean';
const integerAtLeast =
  (min: number): ValueCheck =>
  (value) =>
    isInteger(value) && value >= min;
const orNull =
  (check: ValueCheck): ValueCheck =>
  (value) =>
    value === null || check(value);
const oneOf =
  (...allowed: readonly unknown[]): ValueCheck =>
  (value) =>
    allowed.includes(value);
const inUnitInterval: ValueCheck = (value) => isNumber(value) && value > 0 && value <= 1;
const positiveNumber: ValueCheck = (value) => isNumber(value) && value > 0;

/**
 * SPEC §2.2, in table order. `modelThresholds` only has to be a mapping here: its entries are checked one by one
 * when they are used (§5.2); config.yaml additionally requires every entry to be a number.
 */
export const COMPRESSION_VALUE_CHECKS: Readonly<Record<keyof CompressionConfig, ValueCheck>> = Object.freeze({
  enabled: isBoolean,
  threshold: inUnitInterval,
  modelThresholds: isPlainObject,
  smallContextFloor: (value: unknown) => isNumber(value) && value >= 0 && value <= 1,
  thresholdTokens: orNull(isInteger),
  targetRatio: isNumber,
  tailMode: oneOf('lean', 'legacy'),
  protectFirstN: integerAtLeast(0),
  protectLastN: integerAtLeast(1),
  minTailUserMessages: integerAtLeast(0),
  inPlace: isBoolean,
  abortOnSummaryFailure: isBoolean,
  hygieneHardMessageLimit: integerAtLeast(4),
  summaryTimeoutSeconds: positiveNumber,
  compactionCeilingSeconds: positiveNumber,
  codexGpt55Autoraise: isBoolean,
  codexGpt55AutoraiseNotice: isBoolean,
  codexAppServerAuto: oneOf('native', 'hermes', 'off'),
  codexResponsesNative: isBoolean,
  codexResponsesCompactThreshold: integerAtLeast(1),
});

/** SPEC §19, in table order. */
export const HOST_POLICY_VALUE_CHECKS: Readonly<Record<keyof HostPolicy, ValueCheck>> = Object.freeze({
  background: isBoolean,
  maxAutoPerHour: orNull(integerAtLeast(1)),
  tenantMaxAutoPerHour: orNull(integerAtLeast(1)),
  fixedPointSimilarity: inUnitInterval,
  minGainTokens: integerAtLeast(0),
  summaryBackend: oneOf(...SUMMARY_BACKENDS),
  archivePointer: isBoolean,
  rehydratePinned: isBoolean,
});

const COMPRESSION_KEYS = Object.keys(COMPRESSION_VALUE_CHECKS) as (keyof CompressionConfig)[];
const HOST_POLICY_KEYS = Object.keys(HOST_POLICY_VALUE_CHECKS) as (keyof HostPolicy)[];

// ---------------------------------------------------------------------------------------------------------------
// Lenient programmatic configuration (SPEC §2.1, last paragraph).

function lenientValue<K extends keyof CompressionConfig>(key: K, value: unknown): CompressionConfig[K] {
  if (key === 'modelThresholds') {
    // Entries are kept as-is; bad values are ignored one by one by resolveModelThreshold (§5.2).
    return (isPlainObject(value) ? { ...value } : {}) as CompressionConfig[K];
  }
  if (!COMPRESSION_VALUE_CHECKS[key](value)) return DEFAULT_COMPRESSION_CONFIG[key];
  return (key === 'targetRatio' ? clampTargetRatio(value as number) : value) as CompressionConfig[K];
}

/** Never throws: wrong type or out of range → default; `targetRatio` clamped; `modelThresholds` entries kept. */
export function normalizeCompressionConfig(partial?: unknown): CompressionConfig {
  const source = isPlainObject(partial) ? partial : {};
  const result = {} as Record<keyof CompressionConfig, unknown>;
  for (const key of COMPRESSION_KEYS) result[key] = lenientValue(key, source[key]);
  return result as CompressionConfig;
}

/** Never throws: a missing or invalid value takes its default (like the lenient engine configuration, §2.1). */
export function normalizeHostPolicy(partial?: unknown): HostPolicy {
  const source = isPlainObject(partial) ? partial : {};
  const result = {} as Record<keyof HostPolicy, unknown>;
  for (const key of HOST_POLICY_KEYS) {
    result[key] = HOST_POLICY_VALUE_CHECKS[key](source[key]) ? source[key] : DEFAULT_HOST_POLICY[key];
  }
  return result as HostPolicy;
}
