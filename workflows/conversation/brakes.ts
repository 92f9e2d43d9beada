// The host's brakes on automatic compaction (SPEC §19, issue #9 §10 "runaway compaction"), on top of the engine's
// anti-thrash guard (SPEC §7.4, which measures effectiveness only): a frequency breaker per conversation and per
// tenant, and a fixed-point detector. Pure and deterministic; the workflow passes the clock and the tenant count.

import type { AutoPause } from '../../contracts/conversation.js';
import type { HostPolicy } from '../../engine/index.js';

export const HOUR_MS = 3_600_000;

/** SPEC §19 breaker notice (one constant per notice). */
export function frequencyBreakerNotice(n: number, limit: number): string {
  return `Automatic compression paused: ${n} compactions in the last hour (limit ${limit}). The safety net still applies.`;
}

/** The tenant-wide variant of the breaker notice. */
export function tenantBreakerNotice(n: number, limit: number): string {
  return (
    `Automatic compression paused: ${n} compactions across this tenant's conversations in the last hour ` +
    `(limit ${limit}). The safety net still applies.`
  );
}

/** SPEC §19 fixed-point notice. */
export const NOTICE_FIXED_POINT =
  'Automatic compression paused: the summary stopped changing. It resumes with your next message.';

/** Issue #12: a drop-in client compacts the conversation itself; the server stops compacting on top of it. */
export const NOTICE_CLIENT_COMPACTS =
  'Automatic compression paused: the client compacts this conversation itself. The safety net still applies.';

/** Drops the times older than an hour; returns the count left. */
export function pruneAutoTimes(times: number[], now: number): number {
  const keep = times.filter((t) => now - t < HOUR_MS);
  times.splice(0, times.length, ...keep);
  return keep.length;
}

/** The conversation's own breaker: the pause and its notice, or null when it does not hold. */
export function conversationBreaker(
  policy: Pick<HostPolicy, 'maxAutoPerHour'>,
  recentCount: number,
): { pause: AutoPause; notice: string } | null {
  const limit = policy.maxAutoPerHour;
  if (limit === null || recentCount < limit) return null;
  return { pause: 'frequency', notice: frequencyBreakerNotice(recentCount, limit) };
}

/** The tenant's breaker, from the count of the tenant's automatic compactions in the last hour. */
export function tenantBreaker(
  policy: Pick<HostPolicy, 'tenantMaxAutoPerHour'>,
  tenantCount: number,
): { pause: AutoPause; notice: string } | null {
  const limit = policy.tenantMaxAutoPerHour;
  if (limit === null || tenantCount < limit) return null;
  return { pause: 'tenant_frequency', notice: tenantBreakerNotice(tenantCount, limit) };
}

/**
 * Fixed point: the new summary is near-identical to the previous one and no real user message arrived since the
 * previous compaction — compacting again would only rewrite the same summary.
 */
export function reachedFixedPoint(
  policy: Pick<HostPolicy, 'fixedPointSimilarity'>,
  similarity: number | null,
  userSinceCompaction: boolean,
): boolean {
  return similarity !== null && similarity >= policy.fixedPointSimilarity && !userSinceCompaction;
}
