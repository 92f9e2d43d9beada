// The gateway's request limiter (issue #14 §5) on a clock the test moves: token buckets per tenant and per key,
// requests in flight per tenant, 429s naming the limit with Retry-After, and nothing taken by a refused request.
import { describe, expect, it } from 'vitest';
import { NO_LIMITS, type RequestLimits, resolveLimits } from '../../../infra/config/requestLimits.js';
import { HttpError } from '../../../workers/gateway/errors.js';
import { RequestLimiter } from '../../../workers/gateway/limiter.js';

function clocked() {
  let now = 0;
  const refused: string[] = [];
  const limiter = new RequestLimiter({ now: () => now, onRefused: (limit) => refused.push(limit) });
  return { limiter, refused, advance: (ms: number) => (now += ms) };
}

function refusal(admit: () => unknown): HttpError {
  try {
    admit();
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    return error as HttpError;
  }
  throw new Error('expected a 429');
}

const limits = (set: Partial<RequestLimits>): RequestLimits => ({ ...NO_LIMITS, ...set });

describe('RequestLimiter', () => {
  it('no limits: admits everything', () => {
    const { limiter } = clocked();
    for (let i = 0; i < 1_000; i += 1) limiter.admit('t', 'k', NO_LIMITS)();
  });

  it('a tenant bucket: burst at once, then one request per 60/rate s; Retry-After says when', () => {
    const { limiter, advance } = clocked();
    const l = limits({ requestsPerMinute: 6, burst: 2 });
    limiter.admit('t', 'k1', l);
    limiter.admit('t', 'k2', l);
    const refused = refusal(() => limiter.admit('t', 'k3', l));
    expect(refused.statusCode).toBe(429);
    expect(refused.retryAfterSeconds).toBe(10);
    expect(refused.message).toBe(
      "tenant 't' is over its rate limit (limits.requests_per_minute = 6, burst 2); retry after 10 s",
    );
    advance(4_000);
    expect(refusal(() => limiter.admit('t', 'k1', l)).retryAfterSeconds).toBe(6);
    advance(6_000);
    limiter.admit('t', 'k1', l);
    // Another tenant has its own bucket.
    limiter.admit('u', 'k9', l);
    limiter.admit('u', 'k9', l);
  });

  it('a key bucket is per key; a refused request takes no token from the tenant bucket', () => {
    const { limiter } = clocked();
    const l = limits({ requestsPerMinute: 3, keyRequestsPerMinute: 1 });
    limiter.admit('t', 'a', l);
    const refused = refusal(() => limiter.admit('t', 'a', l));
    expect(refused.message).toContain('limits.key_requests_per_minute = 1');
    expect(refused.retryAfterSeconds).toBe(60);
    limiter.admit('t', 'b', l);
    limiter.admit('t', 'c', l); // the tenant's third token: the refusal of 'a' took none
    expect(refusal(() => limiter.admit('t', 'd', l)).message).toContain('limits.requests_per_minute = 3');
  });

  it('requests in flight: refused at the limit, admitted again once one is released (once)', () => {
    const { limiter, refused: told } = clocked();
    const l = limits({ maxConcurrent: 2 });
    const first = limiter.admit('t', 'k', l);
    limiter.admit('t', 'k', l);
    const refused = refusal(() => limiter.admit('t', 'k', l));
    expect(refused.message).toContain('limits.max_concurrent = 2');
    expect(refused.retryAfterSeconds).toBe(1);
    limiter.admit('u', 'k', l)();
    first();
    first();
    limiter.admit('t', 'k', l);
    expect(refusal(() => limiter.admit('t', 'k', l)).statusCode).toBe(429);
    expect(told).toEqual(['max_concurrent', 'max_concurrent']);
  });

  it('a lower burst after a policy change caps the tokens at once', () => {
    const { limiter } = clocked();
    limiter.admit('t', 'k', limits({ requestsPerMinute: 60 }));
    const lower = limits({ requestsPerMinute: 1, burst: 1 });
    limiter.admit('t', 'k', lower);
    expect(refusal(() => limiter.admit('t', 'k', lower)).statusCode).toBe(429);
  });
});

describe('resolveLimits', () => {
  it('a tenant key replaces the default, null lifts it, an absent key keeps it', () => {
    const defaults = limits({ requestsPerMinute: 600, maxConcurrent: 32 });
    expect(resolveLimits(defaults, null)).toEqual(defaults);
    expect(resolveLimits(defaults, { requests_per_minute: 5, max_concurrent: null })).toEqual(
      limits({ requestsPerMinute: 5 }),
    );
  });
});
