// Request limits in the gateway (issue #14 §5): a token bucket per tenant and per key, and a count of each tenant's
// requests in flight, kept in this process's memory. The limits come with the key lookup (infra/db/apiKeys.ts), so a
// tenant without limits costs nothing and a policy change holds from the next request. Over a limit: 429 with
// Retry-After and a message naming it; a refused request takes no token and counts nowhere.
//
// Per gateway process: with N gateways behind a load balancer a tenant may get up to N times its rate and its
// requests in flight (README "Keys, scopes and limits"); divide the limits by N, or route a tenant to one gateway.
import type { RequestLimits } from '../../infra/config/requestLimits.js';
import { HttpError } from './errors.js';

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, the limiter's clock). */
  at: number;
  /** The rate it was last refilled at (the limits may change between requests). */
  rate: Rate;
}

/** Buckets kept before full ones (idle long enough to have refilled) are dropped. */
const MAX_BUCKETS = 10_000;
/** Retry-After of a refusal for requests in flight: when one of them ends is unknown. */
const IN_FLIGHT_RETRY_AFTER_S = 1;

/** The limit a refusal names (its policy key). */
export type LimitKey = 'requests_per_minute' | 'key_requests_per_minute' | 'max_concurrent';

interface Rate {
  perMinute: number;
  burst: number;
}

export class RequestLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly inFlight = new Map<string, number>();

  private readonly now: () => number;
  private readonly onRefused: (limit: LimitKey) => void;

  /** `now`: the clock (ms); `onRefused`: told the limit of each refusal (metrics). */
  constructor(options: { now?: () => number; onRefused?: (limit: LimitKey) => void } = {}) {
    this.now = options.now ?? (() => performance.now());
    this.onRefused = options.onRefused ?? (() => {});
  }

  /**
   * Admits a request of `tenantId` with key `keyId` under `limits`, or throws the 429. Returns the release to call
   * once the request has ended (its connection closed), for the in-flight count.
   */
  admit(tenantId: string, keyId: string, limits: RequestLimits): () => void {
    const tenantRate = rate(limits.requestsPerMinute, limits.burst);
    const keyRate = rate(limits.keyRequestsPerMinute, limits.keyBurst);
    const running = this.inFlight.get(tenantId) ?? 0;
    if (limits.maxConcurrent !== null && running >= limits.maxConcurrent) {
      this.onRefused('max_concurrent');
      throw new HttpError(
        429,
        `tenant '${tenantId}' has ${running} requests in flight, its limit (limits.max_concurrent = ` +
          `${limits.maxConcurrent}); retry when one has ended`,
        IN_FLIGHT_RETRY_AFTER_S,
      );
    }
    const now = this.now();
    const tenantBucket = tenantRate && this.refilled(`t:${tenantId}`, tenantRate, now);
    if (tenantBucket && tenantRate && tenantBucket.tokens < 1) {
      this.onRefused('requests_per_minute');
      throw refusal(`tenant '${tenantId}'`, 'requests_per_minute', tenantRate, tenantBucket);
    }
    const keyBucket = keyRate && this.refilled(`k:${keyId}`, keyRate, now);
    if (keyBucket && keyRate && keyBucket.tokens < 1) {
      this.onRefused('key_requests_per_minute');
      throw refusal(`this key (${keyId})`, 'key_requests_per_minute', keyRate, keyBucket);
    }
    if (tenantBucket) tenantBucket.tokens -= 1;
    if (keyBucket) keyBucket.tokens -= 1;
    if (limits.maxConcurrent === null) return () => {};
    this.inFlight.set(tenantId, running + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(tenantId) ?? 1) - 1;
      if (left > 0) this.inFlight.set(tenantId, left);
      else this.inFlight.delete(tenantId);
    };
  }

  /** The bucket of `id`, refilled up to `now` (a new one is full). */
  private refilled(id: string, rate: Rate, now: number): Bucket {
    let bucket = this.buckets.get(id);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.dropFullBuckets(now);
      bucket = { tokens: rate.burst, at: now, rate };
      this.buckets.set(id, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(rate.burst, tokensAt(bucket, now));
    bucket.at = now;
    bucket.rate = rate;
    return bucket;
  }

  /** Drops the buckets idle long enough to be full again (a new bucket starts full: nothing is lost). */
  private dropFullBuckets(now: number): void {
    for (const [id, bucket] of this.buckets) {
      if (tokensAt(bucket, now) >= bucket.rate.burst) this.buckets.delete(id);
    }
  }
}

/** The bucket's tokens at `now`, refilled at its rate (uncapped). */
function tokensAt(bucket: Bucket, now: number): number {
  return bucket.tokens + ((now - bucket.at) * bucket.rate.perMinute) / 60_000;
}

function rate(perMinute: number | null, burst: number | null): Rate | null {
  return perMinute === null ? null : { perMinute, burst: burst ?? perMinute };
}

function refusal(who: string, key: LimitKey, rate: Rate, bucket: Bucket): HttpError {
  const seconds = Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / rate.perMinute));
  return new HttpError(
    429,
    `${who} is over its rate limit (limits.${key} = ${rate.perMinute}, burst ${rate.burst}); retry after ${seconds} s`,
    seconds,
  );
}
