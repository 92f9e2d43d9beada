// Per-tenant compression policy: a tenant may override any `compression.*` key (model_thresholds included).
// Stored raw (snake_case, as in config.yaml) with the tenant and validated exactly like config.yaml (SPEC §2.1
// errors); resolution order is tenant override → config.yaml → default.
import {
  type CompressionConfig,
  normalizeCompressionConfig,
  validateCompressionOverrides,
} from '../../engine/config.js';

/** Validates a raw override object; throws ConfigError naming the key (`compression.<key>`). */
export function validateTenantPolicy(raw: unknown): Partial<CompressionConfig> {
  return validateCompressionOverrides(raw ?? {}, 'compression');
}

/**
 * The effective configuration for a tenant. `base` is the config.yaml result (defaults already applied);
 * an override key replaces the base key as a whole (a tenant's `model_thresholds` replaces the file's map).
 */
export function resolveTenantCompressionConfig(base: CompressionConfig, rawOverride: unknown): CompressionConfig {
  const override = validateTenantPolicy(rawOverride);
  return normalizeCompressionConfig({ ...base, ...override });
}
