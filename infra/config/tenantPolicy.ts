// Per-tenant policy: a tenant may override any `compression.*` key (model_thresholds included) and the host policy keys
// of SPEC §19, and set its request limits under `limits` (issue #14 §5, requestLimits.ts). Stored raw (snake_case, as
// in config.yaml) with the tenant and validated exactly like config.yaml (SPEC §2.1 errors); resolution order is
// tenant override → config.yaml → default (limits: tenant → DURABLE_CONTEXT_LIMITS → none).
import {
  type CompressionConfig,
  type HostPolicy,
  normalizeCompressionConfig,
  normalizeHostPolicy,
} from '../../engine/config.js';
import { type CompressionOverrides, validateCompressionSection } from './compressionSection.js';
import { isPlainObject } from './fieldRules.js';
import { type RequestLimits, validateLimitsSection } from './requestLimits.js';

/** The policy key holding the request limits; every other key is a `compression.*` key. */
export const LIMITS_KEY = 'limits';

/** Validates a raw override object; throws ConfigError naming the key (`compression.<key>`, `limits.<key>`). */
export function validateTenantPolicy(raw: unknown): CompressionOverrides & { limits: Partial<RequestLimits> } {
  if (!isPlainObject(raw) || !Object.hasOwn(raw, LIMITS_KEY)) {
    return { ...validateCompressionSection(raw ?? {}, 'compression'), limits: {} };
  }
  const { [LIMITS_KEY]: limits, ...compression } = raw;
  return { ...validateCompressionSection(compression, 'compression'), limits: validateLimitsSection(limits) };
}

/**
 * The effective configuration for a tenant. `base` is the config.yaml result (defaults already applied);
 * an override key replaces the base key as a whole (a tenant's `model_thresholds` replaces the file's map).
 */
export function resolveTenantCompressionConfig(base: CompressionConfig, rawOverride: unknown): CompressionConfig {
  return normalizeCompressionConfig({ ...base, ...validateTenantPolicy(rawOverride).engine });
}

/** The effective SPEC §19 host policy for a tenant, resolved the same way. */
export function resolveTenantHostPolicy(base: HostPolicy, rawOverride: unknown): HostPolicy {
  return normalizeHostPolicy({ ...base, ...validateTenantPolicy(rawOverride).host });
}
