// Bearer authentication (or `x-api-key`): a tenant key (stored hashed, looked up in PostgreSQL or kept while
// PostgreSQL notifies this process of every change, infra/db/keyCache.ts: a revoked key is refused at once) scopes
// every request to its tenant, and a `read` key to the routes that store nothing (issue #14 §4); the request is then
// admitted under the tenant's request limits (§5, limiter.ts). The admin key — or, while it is being rotated, the
// previous one — may create tenants, keys and policies.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { KeyScope } from '../../contracts/http/admin.js';
import { type RequestLimits, resolveLimits } from '../../infra/config/requestLimits.js';
import { type ResolvedKey, resolveApiKey } from '../../infra/db/apiKeys.js';
import type { KeyCache } from '../../infra/db/keyCache.js';
import type { Database } from '../../infra/db/schema.js';
import { HttpError } from './errors.js';
import type { RequestLimiter } from './limiter.js';
import type { PendingWrites } from './pendingWrites.js';
import { isOneOf } from './staticKeys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the bearer key: set by `requireTenant`'s hook before any handler runs. */
    tenantId: string;
    /** The id of the bearer key (set with `tenantId`). */
    keyId: string;
  }
  interface FastifyContextConfig {
    /** A route that stores nothing besides GET (POST /v1/search): a `read` key may use it. */
    readOnly?: boolean;
    /**
     * A long-lived stream (GET /v1/events): it counts against the request rates when it opens, but holds no slot of
     * `max_concurrent` while it stays open (a dashboard's feed must not starve the tenant's requests).
     */
    longLived?: boolean;
  }
}

function bearer(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (!header) {
    // Anthropic's clients send the key as `x-api-key` (issue #12: drop-in endpoints); any route takes it.
    const apiKey = request.headers['x-api-key'];
    if (typeof apiKey === 'string' && apiKey.trim() !== '') return apiKey.trim();
    throw new HttpError(401, 'missing Authorization header (expected: Bearer <key>, or x-api-key: <key>)');
  }
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1]) throw new HttpError(401, 'malformed Authorization header (expected: Bearer <key>)');
  return match[1];
}

/** Whether a key of `scope` may use the request's route: a `read` key, GET routes and those marked `readOnly`. */
function allowed(scope: KeyScope, request: FastifyRequest): boolean {
  return scope === 'full' || request.method === 'GET' || request.routeOptions.config.readOnly === true;
}

/**
 * Resolves the request's key (from `keys` while it is exact: infra/db/keyCache.ts; 401 unless valid now; 403 when its
 * scope does not cover the route).
 */
export function tenantAuth(db: Kysely<Database>, keys?: KeyCache) {
  return async (request: FastifyRequest): Promise<ResolvedKey> => {
    const given = bearer(request);
    const key = keys ? await keys.resolve(db, given) : await resolveApiKey(db, given);
    if (!key) throw new HttpError(401, 'invalid API key');
    if (!allowed(key.scope, request)) {
      throw new HttpError(
        403,
        `this key has scope '${key.scope}': ${request.method} ${request.routeOptions.url} needs scope 'full'`,
      );
    }
    request.tenantId = key.tenantId;
    request.keyId = key.keyId;
    return key;
  };
}

/** What the tenant routes need to admit a request: the pool keys are read from, and the request limits. */
export interface TenantGate {
  db: Kysely<Database>;
  /** The writes the gateway finishes after answering (pendingWrites.ts), when the routes wait for them. */
  after?: PendingWrites;
  /** Absent: no limits (a gateway built without them, e.g. in a unit test). */
  limits?: { limiter: RequestLimiter; defaults: RequestLimits };
  /** The keys this gateway keeps (infra/db/keyCache.ts); absent: every key is looked up. */
  keys?: KeyCache;
}

/** What a tenant route group is given: its pools and the gateway's request limits (app.ts). */
export interface TenantRouteGate {
  db: Kysely<Database>;
  readDb?: Kysely<Database>;
  requestLimits?: TenantGate['limits'];
  keys?: KeyCache;
}

/** The gate of a tenant route group: keys read from the read pool, the gateway's limits, `after` when given. */
export function tenantGate(deps: TenantRouteGate, after?: PendingWrites): TenantGate {
  return {
    db: deps.readDb ?? deps.db,
    ...(after ? { after } : {}),
    ...(deps.requestLimits ? { limits: deps.requestLimits } : {}),
    ...(deps.keys ? { keys: deps.keys } : {}),
  };
}

/**
 * Scopes the routes of a plugin to the tenant of the bearer key: declares `request.tenantId` (fastify's
 * decorateRequest, so every request object has the same shape) and sets it before any handler runs (401 otherwise),
 * then admits the request under the tenant's limits (429 otherwise; limiter.ts). With `after`, a handler runs once
 * the writes the gateway finishes after answering are done — the named conversation's, else the tenant's: the
 * tenant reads what it was answered, and writes after it.
 */
export function requireTenant(app: FastifyInstance, gate: TenantGate): void {
  app.decorateRequest('tenantId', '');
  app.decorateRequest('keyId', '');
  const auth = tenantAuth(gate.db, gate.keys);
  const { after, limits } = gate;
  app.addHook('preHandler', async (request, reply) => {
    const key = await auth(request);
    if (limits) {
      const release = limits.limiter.admit(key.tenantId, key.keyId, resolveLimits(limits.defaults, key.limits));
      // The response closes once the answer is written (a stream: when it ends) or the client went away — maybe
      // already, while the key was looked up: then its 'close' event has passed.
      if (reply.raw.closed || request.routeOptions.config.longLived === true) release();
      else reply.raw.once('close', release);
    }
    if (!after) return;
    // A route of one conversation waits for that conversation's writes only; any other, for the tenant's.
    const { conversationId } = (request.params ?? {}) as { conversationId?: unknown };
    await (typeof conversationId === 'string'
      ? after.settled(request.tenantId, conversationId)
      : after.settledTenant(request.tenantId));
  });
}

/**
 * The admin routes that change keys, policies or tenants make this gateway forget the keys it keeps before they
 * answer (`keys`: infra/db/keyCache.ts), so that the change holds here at once; other gateways hear of it from
 * PostgreSQL (migrations/0025). Every write forgets every key: such writes are rare.
 */
export function forgetKeysOnWrite(app: FastifyInstance, keys: KeyCache | undefined): void {
  if (!keys) return;
  app.addHook('onSend', async (request, _reply, payload) => {
    if (request.method !== 'GET') keys.forgetTenant(null);
    return payload;
  });
}

/** The admin keys a gateway accepts: the current one, and the previous one while it is rotated out. */
export function adminKeysOf(deps: { adminKey: string | null; previousAdminKey?: string | null }): string[] {
  return [deps.adminKey, deps.previousAdminKey].filter((key): key is string => !!key);
}

/** 403 unless the request carries one of the admin keys (the current one, and the previous one while rotating). */
export function adminAuth(adminKeys: readonly string[]) {
  return async (request: FastifyRequest): Promise<void> => {
    if (adminKeys.length === 0 || !isOneOf(bearer(request), adminKeys)) throw new HttpError(403, 'admin key required');
  };
}
