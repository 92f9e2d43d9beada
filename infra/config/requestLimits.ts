// Request limits (issue #14 §5): a tenant's request rate and requests in flight, and each of its keys' rate. Set in the
// tenant policy under `limits` (PUT /v1/tenants/:id/policy, snake_case like the compression keys) and, as the
// process-wide default, in `DURABLE_CONTEXT_LIMITS` (`requests_per_minute=600,max_concurrent=32`). A tenant's key
// replaces the default as a whole; `null` lifts the default for that tenant; absent everywhere: no limit.
// Validated with errors naming the key (`Invalid configuration: limits.burst: expected …`); enforced by the gateway
// (workers/gateway/limiter.ts).
import { z } from 'zod';
import { type FieldRule, isPlainObject, sectionObject, validateSection } from './fieldRules.js';

export interface RequestLimits {
  /** The tenant's sustained rate, all its keys together (a token bucket refilled at this rate). */
  requestsPerMinute: number | null;
  /** The tenant bucket's size: requests it may send at once after a quiet spell (default: requestsPerMinute). */
  burst: number | null;
  /** The tenant's requests in flight (a streamed answer counts until it ends). */
  maxConcurrent: number | null;
  /** Each key's sustained rate. */
  keyRequestsPerMinute: number | null;
  /** Each key bucket's size (default: keyRequestsPerMinute). */
  keyBurst: number | null;
}

export const NO_LIMITS: RequestLimits = Object.freeze({
  requestsPerMinute: null,
  burst: null,
  maxConcurrent: null,
  keyRequestsPerMinute: null,
  keyBurst: null,
});

/** The largest value of any limit (a 32-bit integer, like the other counts of the store). */
const MAX_LIMIT = 2_147_483_647;
const ALLOWED = `integer 1–${MAX_LIMIT}, or null (no limit)`;
const limitRule: FieldRule<number | null> = {
  allowed: ALLOWED,
  schema: z.number().int().min(1).max(MAX_LIMIT).nullable(),
};

/** snake_case policy key → `RequestLimits` key, in README order. */
export const LIMIT_KEYS = Object.freeze({
  requests_per_minute: 'requestsPerMinute',
  burst: 'burst',
  max_concurrent: 'maxConcurrent',
  key_requests_per_minute: 'keyRequestsPerMinute',
  key_burst: 'keyBurst',
} as const satisfies Record<string, keyof RequestLimits>);

const LIMIT_RULES: Record<string, FieldRule<number | null>> = Object.fromEntries(
  Object.keys(LIMIT_KEYS).map((key) => [key, limitRule]),
);

/** Validates a policy's `limits` section (absent or null: empty); returns only the keys present, camelCase. */
export function validateLimitsSection(raw: unknown, prefix = 'limits'): Partial<RequestLimits> {
  const values = validateSection(prefix, sectionObject(prefix, raw), LIMIT_RULES);
  const out: Partial<RequestLimits> = {};
  for (const [snake, value] of Object.entries(values)) {
    out[LIMIT_KEYS[snake as keyof typeof LIMIT_KEYS]] = value ?? null;
  }
  return out;
}

/**
 * The limits in force for a tenant: its stored `limits` section over the process default. The section was validated
 * when stored; a value that no longer passes (never expected) is ignored rather than failing the request.
 */
export function resolveLimits(defaults: RequestLimits, stored: unknown): RequestLimits {
  if (!isPlainObject(stored)) return defaults;
  const out = { ...defaults };
  for (const [snake, camel] of Object.entries(LIMIT_KEYS)) {
    if (!Object.hasOwn(stored, snake)) continue;
    const parsed = limitRule.schema.safeParse(stored[snake]);
    if (parsed.success) out[camel] = parsed.data;
  }
  return out;
}

/** `DURABLE_CONTEXT_LIMITS` text (`key=value,…`, values integers ≥ 1) → limits; null when it is not valid. */
export function parseLimitsText(text: string): RequestLimits | null {
  const section: Record<string, unknown> = {};
  for (const part of text.split(',')) {
    const match = /^\s*([a-z_]+)\s*=\s*(\d{1,10})\s*$/.exec(part);
    if (!match?.[1] || !match[2] || Object.hasOwn(section, match[1])) return null;
    section[match[1]] = Number(match[2]);
  }
  try {
    return { ...NO_LIMITS, ...validateLimitsSection(section) };
  } catch {
    return null;
  }
}
