// Strict start-up validation of the sections of config.yaml that SPEC §2 owns (§2.1–§2.3): `compression`,
// `auxiliary.compression`, `prompt_caching`, `context` and the single key `model.context_length`. A bad key fails
// start-up with `Invalid configuration: <key>: ...`; sections the spec does not own are left to their owners.
import { z } from 'zod';
import {
  type CacheTtl,
  CONTEXT_ENGINE_NAME_PATTERN,
  type CompressionConfig,
  ConfigError,
  DEFAULT_HOST_POLICY,
  type HostPolicy,
  normalizeCompressionConfig,
} from '../../engine/config.js';
import { validateCompressionSection } from './compressionSection.js';
import {
  type FieldRule,
  HTTP_URL_PATTERN,
  isPlainObject,
  type PlainObject,
  sectionObject,
  validateField,
  validateSection,
} from './fieldRules.js';

/** SPEC §2.3 `auxiliary.compression.*`. */
const AUXILIARY_RULES = {
  model: { allowed: 'null or non-empty string', schema: z.string().min(1).nullable() },
  provider: { allowed: 'non-empty string', schema: z.string().min(1) },
  base_url: { allowed: 'null or URL string', schema: z.string().regex(HTTP_URL_PATTERN).nullable() },
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

/** The `context` section (SPEC §2.3): config.yaml's, or a tenant policy's override (issue #14 §1). */
export function validateContextSection(value: unknown): { engine?: string } {
  return validateSection('context', sectionObject('context', value), CONTEXT_RULES);
}

function parseContext(root: PlainObject): { engine: string } {
  return { engine: validateContextSection(root.context).engine ?? 'compressor' };
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
