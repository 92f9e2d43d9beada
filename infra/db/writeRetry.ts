// Write transactions and retries (SPEC §13.6): on serialization failure, deadlock or lock timeout the WHOLE
// transaction runs again after a uniformly random 20–150 ms sleep, at most 15 attempts; anything else is raised
// at once. Randomness and sleeping live here (activities), never in workflow code.
import type { Kysely } from 'kysely';
import { isStalePreparedStatement } from './preparedStatements.js';
import type { Database } from './schema.js';
import { type TenantOptions, type TenantTx, withTenant } from './tenant.js';

/** serialization_failure, deadlock_detected, lock_not_available. */
export const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set(['40001', '40P01', '55P03']);
export const MAX_WRITE_ATTEMPTS = 15;
export const RETRY_SLEEP_MIN_MS = 20;
export const RETRY_SLEEP_MAX_MS = 150;

export interface WriteRetryOptions {
  /** Uniform in [0, 1); defaults to Math.random. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  maxAttempts?: number;
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The SQLSTATE of a PostgreSQL error (pg puts it in `code`), looking through one level of `cause`. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown }).cause;
  if (typeof cause === 'object' && cause !== null) {
    const inner = (cause as { code?: unknown }).code;
    if (typeof inner === 'string') return inner;
  }
  return undefined;
}

export function isRetryableWriteError(error: unknown): boolean {
  const state = sqlState(error);
  return (state !== undefined && RETRYABLE_SQLSTATES.has(state)) || isStalePreparedStatement(error);
}

/** A whole number of milliseconds, uniform over [20, 150]. */
export function retrySleepMs(random: () => number): number {
  const span = RETRY_SLEEP_MAX_MS - RETRY_SLEEP_MIN_MS + 1;
  return RETRY_SLEEP_MIN_MS + Math.min(span - 1, Math.floor(random() * span));
}

/** Runs `fn` (one whole transaction) and re-runs it on a retryable SQLSTATE (SPEC §13.6). */
export async function withWriteRetry<T>(fn: () => Promise<T>, opts: WriteRetryOptions = {}): Promise<T> {
  const random = opts.random ?? Math.random;
  const sleep = opts.sleep ?? defaultSleep;
  const maxAttempts = Math.max(1, opts.maxAttempts ?? MAX_WRITE_ATTEMPTS);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= maxAttempts || !isRetryableWriteError(error)) throw error;
      await sleep(retrySleepMs(random));
    }
  }
}

/** One tenant-scoped write transaction (row-level security on), retried as a whole (SPEC §13.6). */
export function withTenantWrite<T>(
  db: Kysely<Database>,
  tenantId: string,
  fn: (tx: TenantTx) => Promise<T>,
  opts: WriteRetryOptions & Pick<TenantOptions, 'genericPlans'> = {},
): Promise<T> {
  const { genericPlans, ...retry } = opts;
  return withWriteRetry(() => withTenant(db, tenantId, fn, genericPlans ? { genericPlans } : {}), retry);
}
