// Per-tenant compression policy: a tenant may override any `compression.*` key (model_thresholds included) and the
// host policy keys of SPEC §19. Stored raw (snake_case, as in config.yaml) with the tenant and validated exactly like
// config.yaml (SPEC §2.1 errors); resolution order is tenant override → config.yaml → default.
import {
  type CompressionConfig,
  type HostPolicy,
  normalizeCompressionConfig,
  normalizeHostPolicy,
} from '../../engine/config.js';
import { type CompressionOverrides, validateCompressionSection } from './compressionSection.js';

/** Validates a raw override object; throws ConfigError naming the key (`compression.<key>`). */
export function validateTenantPolicy(raw: unknown): CompressionOverrides {
  return validateCompressionSection(raw ?? {}, 'compression');
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
