// Strict validation of a snake_case `compression` section (SPEC §2.1, §2.2 and the host policy keys of §19): the
// section of config.yaml and a tenant's policy override alike. Errors name the key; the "Allowed" texts are the
// spec's, the ranges are the engine's (engine/config.ts).
import { z } from 'zod';
import {
  COMPRESSION_VALUE_CHECKS,
  type CompressionConfig,
  clampTargetRatio,
  HOST_POLICY_VALUE_CHECKS,
  type HostPolicy,
} from '../../engine/config.js';
import { checkedRule, type FieldRule, sectionObject, validateSection } from './fieldRules.js';

function rule<K extends keyof CompressionConfig>(key: K, allowed: string): FieldRule<CompressionConfig[K]> {
  return checkedRule(allowed, COMPRESSION_VALUE_CHECKS[key]);
}

function hostRule<K extends keyof HostPolicy>(key: K, allowed: string): FieldRule<HostPolicy[K]> {
  return checkedRule(allowed, HOST_POLICY_VALUE_CHECKS[key]);
}

/** SPEC §2.2, in table order. */
const COMPRESSION_RULES: { [K in keyof CompressionConfig]: FieldRule<CompressionConfig[K]> } = {
  enabled: rule('enabled', 'boolean'),
  threshold: rule('threshold', 'number in (0, 1]'),
  // Stricter than the programmatic configuration: in config.yaml every entry must be a number.
  modelThresholds: {
    allowed: 'map of string → number (a number outside (0, 1] is accepted and ignored, §5.2)',
    schema: z.record(z.string(), z.number()),
  },
  smallContextFloor: rule('smallContextFloor', 'number in [0, 1]'),
  thresholdTokens: rule('thresholdTokens', 'null or integer'),
  targetRatio: {
    allowed: 'number',
    schema: z.custom<number>(COMPRESSION_VALUE_CHECKS.targetRatio).transform(clampTargetRatio),
  },
  tailMode: rule('tailMode', 'lean or legacy'),
  protectFirstN: rule('protectFirstN', 'integer ≥ 0'),
  protectLastN: rule('protectLastN', 'integer ≥ 1'),
  minTailUserMessages: rule('minTailUserMessages', 'integer ≥ 0'),
  inPlace: rule('inPlace', 'boolean'),
  abortOnSummaryFailure: rule('abortOnSummaryFailure', 'boolean'),
  hygieneHardMessageLimit: rule('hygieneHardMessageLimit', 'integer ≥ 4'),
  summaryTimeoutSeconds: rule('summaryTimeoutSeconds', 'number > 0'),
  compactionCeilingSeconds: rule('compactionCeilingSeconds', 'number > 0'),
  codexGpt55Autoraise: rule('codexGpt55Autoraise', 'boolean'),
  codexGpt55AutoraiseNotice: rule('codexGpt55AutoraiseNotice', 'boolean'),
  codexAppServerAuto: rule('codexAppServerAuto', 'native, hermes or off'),
  codexResponsesNative: rule('codexResponsesNative', 'boolean'),
  codexResponsesCompactThreshold: rule('codexResponsesCompactThreshold', 'integer > 0'),
};

/** SPEC §19, in table order. */
const HOST_POLICY_RULES: { [K in keyof HostPolicy]: FieldRule<HostPolicy[K]> } = {
  background: hostRule('background', 'boolean'),
  maxAutoPerHour: hostRule('maxAutoPerHour', 'integer ≥ 1, or null (no limit)'),
  tenantMaxAutoPerHour: hostRule('tenantMaxAutoPerHour', 'integer ≥ 1, or null'),
  fixedPointSimilarity: hostRule('fixedPointSimilarity', 'number in (0, 1]'),
  minGainTokens: hostRule('minGainTokens', 'integer ≥ 0'),
  summaryBackend: hostRule('summaryBackend', 'local, extractive or anthropic_native'),
  archivePointer: hostRule('archivePointer', 'boolean'),
  rehydratePinned: hostRule('rehydratePinned', 'boolean'),
};

const COMPRESSION_KEYS = Object.keys(COMPRESSION_RULES) as (keyof CompressionConfig)[];
const HOST_POLICY_KEYS = Object.keys(HOST_POLICY_RULES) as (keyof HostPolicy)[];

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
