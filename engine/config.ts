// Configuration of the owned config.yaml sections (SPEC §2): the camelCase `CompressionConfig` (§17.1), lenient
// programmatic normalisation (§2.1, never throws) and strict start-up validation of the snake_case file (§2.1–§2.3).
import { z } from 'zod';

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

/** Start-up configuration error with the exact texts of SPEC §2.1 / §16.5. */
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

/** One validated key: the "Allowed" column text (§2.2, §2.3) and the zod schema that implements it. */
interface FieldRule<T> {
  allowed: string;
  schema: z.ZodType<T>;
}

const boolean = (): FieldRule<boolean> => ({ allowed: 'boolean', schema: z.boolean() });
const integerAtLeast = (min: number): FieldRule<number> => ({
  allowed: `integer ≥ ${min}`,
  schema: z.number().int().min(min),
});
const positiveNumber = (): FieldRule<number> => ({ allowed: 'number > 0', schema: z.number().positive() });

type CompressionRules = { [K in keyof CompressionConfig]: FieldRule<CompressionConfig[K]> };

/** SPEC §2.2, in table order. */
const COMPRESSION_RULES: CompressionRules = {
  enabled: boolean(),
  threshold: { allowed: 'number in (0, 1]', schema: z.number().gt(0).lte(1) },
  modelThresholds: {
    allowed: 'map of string → number (a number outside (0, 1] is accepted and ignored, §5.2)',
    schema: z.record(z.string(), z.number()),
  },
  smallContextFloor: { allowed: 'number in [0, 1]', schema: z.number().gte(0).lte(1) },
  thresholdTokens: { allowed: 'null or integer', schema: z.number().int().nullable() },
  targetRatio: { allowed: 'number', schema: z.number().transform(clampTargetRatio) },
  tailMode: { allowed: 'lean or legacy', schema: z.enum(['lean', 'legacy']) },
  protectFirstN: integerAtLeast(0),
  protectLastN: integerAtLeast(1),
  minTailUserMessages: integerAtLeast(0),
  inPlace: boolean(),
  abortOnSummaryFailure: boolean(),
  hygieneHardMessageLimit: integerAtLeast(4),
  summaryTimeoutSeconds: positiveNumber(),
  compactionCeilingSeconds: positiveNumber(),
  codexGpt55Autoraise: boolean(),
  codexGpt55AutoraiseNotice: boolean(),
  codexAppServerAuto: { allowed: 'native, hermes or off', schema: z.enum(['native', 'hermes', 'off']) },
  codexResponsesNative: boolean(),
  codexResponsesCompactThreshold: { allowed: 'integer > 0', schema: z.number().int().positive() },
};

const COMPRESSION_KEYS = Object.keys(COMPRESSION_RULES) as (keyof CompressionConfig)[];

// ---------------------------------------------------------------------------------------------------------------
// Host policy keys of SPEC §19: more `compression.*` keys, read by the host (workflows, gateway), not by the engine
// of §17 (its CompressionConfig keeps exactly the twenty keys of §2.2). Validated like every key of §2.2.

export interface HostPolicy {
  /** Frequency breaker per conversation: automatic compactions in a rolling hour (null: no limit). */
  maxAutoPerHour: number | null;
  /** The same breaker across a tenant's conversations (null: off). */
  tenantMaxAutoPerHour: number | null;
  /** Fixed-point detector: a new summary at least this similar to the previous one, without new user input. */
  fixedPointSimilarity: number;
  /** Minimum-gain rule: a compaction saving fewer estimated tokens is not committed (a strike, §7.4). */
  minGainTokens: number;
}

/** SPEC §19 defaults. */
export const DEFAULT_HOST_POLICY: Readonly<HostPolicy> = Object.freeze({
  maxAutoPerHour: 6,
  tenantMaxAutoPerHour: null,
  fixedPointSimilarity: 0.95,
  minGainTokens: 1,
});

const HOST_POLICY_RULES: { [K in keyof HostPolicy]: FieldRule<HostPolicy[K]> } = {
  maxAutoPerHour: { allowed: 'integer ≥ 1, or null (no limit)', schema: z.number().int().min(1).nullable() },
  tenantMaxAutoPerHour: { allowed: 'integer ≥ 1, or null', schema: z.number().int().min(1).nullable() },
  fixedPointSimilarity: { allowed: 'number in (0, 1]', schema: z.number().gt(0).lte(1) },
  minGainTokens: integerAtLeast(0),
};

const HOST_POLICY_KEYS = Object.keys(HOST_POLICY_RULES) as (keyof HostPolicy)[];

/** Never throws: a missing or invalid value takes its default (like the lenient engine configuration, §2.1). */
export function normalizeHostPolicy(partial?: unknown): HostPolicy {
  const source = isPlainObject(partial) ? partial : {};
  const result = {} as Record<keyof HostPolicy, unknown>;
  for (const key of HOST_POLICY_KEYS) {
    const parsed = source[key] === undefined ? null : HOST_POLICY_RULES[key].schema.safeParse(source[key]);
    result[key] = parsed?.success ? parsed.data : DEFAULT_HOST_POLICY[key];
  }
  return result as HostPolicy;
}

function toSnakeCase(camel: string): string {
  return camel.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** snake_case config.yaml key → camelCase `CompressionConfig` key. */
export const COMPRESSION_SNAKE_TO_CAMEL: Readonly<Record<string, keyof CompressionConfig>> = Object.freeze(
  Object.fromEntries(COMPRESSION_KEYS.map((camel) => [toSnakeCase(camel), camel])),
);

const HOST_SNAKE_TO_CAMEL: Readonly<Record<string, keyof HostPolicy>> = Object.freeze(
  Object.fromEntries(HOST_POLICY_KEYS.map((camel) => [toSnakeCase(camel), camel])),
);

/** `CompressionConfig` → the snake_case shape of config.yaml's `compression` section. */
export function compressionConfigToSnakeCase(config: CompressionConfig): Record<string, unknown> {
  return Object.fromEntries(COMPRESSION_KEYS.map((camel) => [toSnakeCase(camel), config[camel]]));
}

// ---------------------------------------------------------------------------------------------------------------
// Lenient programmatic configuration (SPEC §2.1, last paragraph).

function lenientValue<K extends keyof CompressionConfig>(key: K, value: unknown): CompressionConfig[K] {
  const fallback = DEFAULT_COMPRESSION_CONFIG[key];
  if (value === undefined) return copyDefault(fallback);
  if (key === 'modelThresholds') {
    // Entries are kept as-is; bad values are ignored one by one by resolveModelThreshold (§5.2).
    return (isPlainObject(value) ? { ...value } : {}) as CompressionConfig[K];
  }
  const parsed = COMPRESSION_RULES[key].schema.safeParse(value);
  return parsed.success ? parsed.data : copyDefault(fallback);
}

function copyDefault<T>(value: T): T {
  return (isPlainObject(value) ? { ...value } : value) as T;
}

/** Never throws: wrong type or out of range → default; `targetRatio` clamped; `modelThresholds` entries kept. */
export function normalizeCompressionConfig(partial?: unknown): CompressionConfig {
  const source = isPlainObject(partial) ? partial : {};
  const result = {} as Record<keyof CompressionConfig, unknown>;
  for (const key of COMPRESSION_KEYS) result[key] = lenientValue(key, source[key]);
  return result as CompressionConfig;
}

// ---------------------------------------------------------------------------------------------------------------
// Strict config.yaml validation (SPEC §2.1–§2.3).

function validateField<T>(dottedKey: string, rule: FieldRule<T>, value: unknown): T {
  const parsed = rule.schema.safeParse(value);
  if (!parsed.success) throw ConfigError.badValue(dottedKey, rule.allowed, value);
  return parsed.data;
}

/** An owned section: absent or `null` (an empty YAML section) is empty; anything else must be a mapping. */
function sectionObject(dottedKey: string, value: unknown): PlainObject {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) throw ConfigError.badValue(dottedKey, 'mapping', value);
  return value;
}

/** Validates the given fields of one owned section; unknown keys fail. Returns only the keys present. */
function validateSection<R extends Record<string, FieldRule<unknown>>>(
  prefix: string,
  section: PlainObject,
  rules: R,
): { [K in keyof R]?: R[K] extends FieldRule<infer T> ? T : never } {
  const out: Record<string, unknown> = {};
  for (const [snakeKey, value] of Object.entries(section)) {
    const dottedKey = `${prefix}.${snakeKey}`;
    const rule = Object.hasOwn(rules, snakeKey) ? rules[snakeKey] : undefined;
    if (!rule) throw ConfigError.unknownKey(dottedKey);
    if (value === undefined) continue;
    out[snakeKey] = validateField(dottedKey, rule, value);
  }
  return out as { [K in keyof R]?: R[K] extends FieldRule<infer T> ? T : never };
}

/** Every key of the `compression` section: SPEC §2.2 and the host policy keys of §19. */
const SNAKE_COMPRESSION_RULES: Record<string, FieldRule<unknown>> = Object.fromEntries([
  ...COMPRESSION_KEYS.map((camel) => [toSnakeCase(camel), COMPRESSION_RULES[camel] as FieldRule<unknown>]),
  ...HOST_POLICY_KEYS.map((camel) => [toSnakeCase(camel), HOST_POLICY_RULES[camel] as FieldRule<unknown>]),
]);

/** A validated `compression` section split into the engine's keys (§2.2) and the host's (§19). */
export interface CompressionOverrides {
  engine: Partial<CompressionConfig>;
  host: Partial<HostPolicy>;
}

/**
 * Strictly validates a (possibly partial) snake_case `compression` object, e.g. a per-tenant policy override, with
 * the §2.2 and §19 keys. Throws `ConfigError` with keys named `<keyPrefix>.<key>`. `null`/absent is empty.
 */
export function validateCompressionSection(raw: unknown, keyPrefix = 'compression'): CompressionOverrides {
  const section = sectionObject(keyPrefix, raw);
  const validated = validateSection(keyPrefix, section, SNAKE_COMPRESSION_RULES);
  const engine: Partial<Record<keyof CompressionConfig, unknown>> = {};
  const host: Partial<Record<keyof HostPolicy, unknown>> = {};
  for (const [snakeKey, value] of Object.entries(validated)) {
    const camel = COMPRESSION_SNAKE_TO_CAMEL[snakeKey];
    if (camel) engine[camel] = value;
    const hostKey = HOST_SNAKE_TO_CAMEL[snakeKey];
    if (hostKey) host[hostKey] = value;
  }
  return { engine: engine as Partial<CompressionConfig>, host: host as Partial<HostPolicy> };
}

/** The §2.2 keys of a validated `compression` section (the §19 keys are validated too, then left out). */
export function validateCompressionOverrides(raw: unknown, keyPrefix = 'compression'): Partial<CompressionConfig> {
  return validateCompressionSection(raw, keyPrefix).engine;
}

const URL_PATTERN = /^https?:\/\/[^\s/?#]+(?:[/?#]\S*)?$/i;
export const CONTEXT_ENGINE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** SPEC §2.3 `auxiliary.compression.*`. */
const AUXILIARY_RULES = {
  model: { allowed: 'null or non-empty string', schema: z.string().min(1).nullable() },
  provider: { allowed: 'non-empty string', schema: z.string().min(1) },
  base_url: { allowed: 'null or URL string', schema: z.string().regex(URL_PATTERN).nullable() },
  timeout: { allowed: 'null or number > 0', schema: z.number().positive().nullable() },
} satisfies Record<string, FieldRule<unknown>>;

/** SPEC §2.3 `prompt_caching.cache_ttl`: a falsy value (null, false, "") disables caching. */
const PROMPT_CACHING_RULES = {
  cache_ttl: {
    allowed: '"5m", "1h", or a falsy value (null, false, "")',
    schema: z.union([z.enum(['5m', '1h']), z.null(), z.literal(false), z.literal('')]),
  },
} satisfies Record<string, FieldRule<unknown>>;

const CONTEXT_RULES = {
  engine: {
    allowed: `string matching ${CONTEXT_ENGINE_NAME_PATTERN.source}`,
    schema: z.string().regex(CONTEXT_ENGINE_NAME_PATTERN),
  },
} satisfies Record<string, FieldRule<unknown>>;

const MODEL_CONTEXT_LENGTH_RULE: FieldRule<number | null> = {
  allowed: 'null or integer > 0',
  schema: z.number().int().positive().nullable(),
};

export interface AuxiliaryCompressionConfig {
  model: string | null;
  provider: string;
  baseUrl: string | null;
  /** Seconds; `null` means `compression.summaryTimeoutSeconds`. */
  timeout: number | null;
}

export interface OwnedConfig {
  compression: CompressionConfig;
  /** SPEC §19 host policy keys of the `compression` section. */
  hostPolicy: HostPolicy;
  auxiliary: AuxiliaryCompressionConfig;
  promptCaching: { cacheTtl: CacheTtl | null };
  context: { engine: string };
  model: { contextLength: number | null };
}

function parseAuxiliary(root: PlainObject): AuxiliaryCompressionConfig {
  // Only `auxiliary.compression` is owned; the rest of `auxiliary` is validated elsewhere.
  const auxiliary = isPlainObject(root.auxiliary) ? root.auxiliary : {};
  const section = sectionObject('auxiliary.compression', auxiliary.compression);
  const v = validateSection('auxiliary.compression', section, AUXILIARY_RULES);
  return {
    model: v.model ?? null,
    provider: v.provider ?? 'auto',
    baseUrl: v.base_url ?? null,
    timeout: v.timeout ?? null,
  };
}

function parsePromptCaching(root: PlainObject): { cacheTtl: CacheTtl | null } {
  const section = sectionObject('prompt_caching', root.prompt_caching);
  const v = validateSection('prompt_caching', section, PROMPT_CACHING_RULES);
  if (v.cache_ttl === undefined) return { cacheTtl: '5m' };
  return { cacheTtl: v.cache_ttl || null };
}

function parseContext(root: PlainObject): { engine: string } {
  const section = sectionObject('context', root.context);
  const v = validateSection('context', section, CONTEXT_RULES);
  return { engine: v.engine ?? 'compressor' };
}

function parseModel(root: PlainObject): { contextLength: number | null } {
  // Only the single key `model.context_length` is owned; `model` may be any shape otherwise.
  if (!isPlainObject(root.model) || root.model.context_length === undefined) return { contextLength: null };
  return { contextLength: validateField('model.context_length', MODEL_CONTEXT_LENGTH_RULE, root.model.context_length) };
}

/**
 * Strict start-up validation of the owned sections of the whole parsed config.yaml (snake_case, SPEC §2.1).
 * Throws `ConfigError` naming the first offending key; sections not owned are ignored.
 */
export function parseOwnedConfig(raw: unknown): OwnedConfig {
  const root = raw === undefined || raw === null ? {} : raw;
  if (!isPlainObject(root)) throw new ConfigError('', 'Invalid configuration: expected a mapping at the top level');
  const overrides = validateCompressionSection(root.compression, 'compression');
  return {
    compression: { ...normalizeCompressionConfig({}), ...overrides.engine },
    hostPolicy: { ...DEFAULT_HOST_POLICY, ...overrides.host },
    auxiliary: parseAuxiliary(root),
    promptCaching: parsePromptCaching(root),
    context: parseContext(root),
    model: parseModel(root),
  };
}
