// Per-tenant policy: a tenant may override any `compression.*` key (model_thresholds included) and the host policy keys
// of SPEC §19, set its request limits under `limits` (issue #14 §5, requestLimits.ts) and its context engine under
// `context.engine` (SPEC §10.3, issue #14 §1). Stored raw (snake_case, as in config.yaml) with the tenant and validated
// exactly like config.yaml (SPEC §2.1 errors); resolution order is tenant override → config.yaml → default (limits:
// tenant → DURABLE_CONTEXT_LIMITS → none).
import {
  type CompressionConfig,
  ConfigError,
  type HostPolicy,
  normalizeCompressionConfig,
  normalizeHostPolicy,
} from '../../engine/config.js';
import { type CompressionOverrides, validateCompressionSection } from './compressionSection.js';
import { isPlainObject } from './fieldRules.js';
import { validateContextSection } from './ownedConfig.js';
import { type RequestLimits, validateLimitsSection } from './requestLimits.js';

/** The policy key holding the request limits. */
export const LIMITS_KEY = 'limits';
/** The policy key holding the `context` section (`context.engine`); every other key is a `compression.*` key. */
export const CONTEXT_KEY = 'context';

export type ValidatedTenantPolicy = CompressionOverrides & {
  limits: Partial<RequestLimits>;
  context: { engine?: string };
};

/**
 * Validates a raw override object; throws ConfigError naming the key (`compression.<key>`, `limits.<key>`,
 * `context.<key>`).
 */
export function validateTenantPolicy(raw: unknown): ValidatedTenantPolicy {
  if (!isPlainObject(raw)) return { ...validateCompressionSection(raw ?? {}, 'compression'), limits: {}, context: {} };
  const { [LIMITS_KEY]: limits, [CONTEXT_KEY]: context, ...compression } = raw;
  return {
    ...validateCompressionSection(compression, 'compression'),
    limits: limits === undefined ? {} : validateLimitsSection(limits),
    context: validateContextSection(context),
  };
}

/**
 * The effective configuration for a tenant. `base` is the config.yaml result (defaults already applied);
 * an override key replaces the base key as a whole (a tenant's `model_thresholds` replaces the file's map).
 */
export function resolveTenantCompressionConfig(base: CompressionConfig, rawOverride: unknown): CompressionConfig {
  return normalizeCompressionConfig({ ...base, ...validateTenantPolicy(rawOverride).engine });
}

/** The tenant's context engine name (SPEC §10.3): its `context.engine`, else config.yaml's. */
export function resolveTenantContextEngine(base: string, rawOverride: unknown): string {
  return validateTenantPolicy(rawOverride).context.engine ?? base;
}

/** What config.yaml sets for every tenant (defaults applied). */
export interface BasePolicy {
  config: CompressionConfig;
  host: HostPolicy;
  /** `context.engine` (SPEC §10.3). */
  engine: string;
}

/**
 * A tenant's effective policy (tenant override → config.yaml → default), validated once. A stored policy is validated
 * on write; one that no longer validates (a stricter host since) must not stop a conversation or a compaction:
 * config.yaml's policy applies then, and `invalid` says why (the caller logs it).
 */
export function effectiveTenantPolicy(base: BasePolicy, rawOverride: unknown): BasePolicy & { invalid: string | null } {
  try {
    const override = validateTenantPolicy(rawOverride);
    return {
      config: normalizeCompressionConfig({ ...base.config, ...override.engine }),
      host: normalizeHostPolicy({ ...base.host, ...override.host }),
      engine: override.context.engine ?? base.engine,
      invalid: null,
    };
  } catch (err) {
    if (err instanceof ConfigError) return { ...base, invalid: err.message };
    throw err;
  }
}
