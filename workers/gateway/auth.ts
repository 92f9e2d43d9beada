// Bearer authentication (or `x-api-key`): a tenant key (stored hashed) scopes every request to its tenant; the admin
// key (from the environment) may create tenants, keys and policies.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { tenantForApiKey } from '../../infra/db/apiKeys.js';
import type { Database } from '../../infra/db/schema.js';
import { HttpError } from './errors.js';
import type { PendingWrites } from './pendingWrites.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the bearer key: set by `requireTenant`'s hook before any handler runs. */
    tenantId: string;
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

export function tenantAuth(db: Kysely<Database>) {
  return async (request: FastifyRequest): Promise<void> => {
    const tenantId = await tenantForApiKey(db, bearer(request));
    if (!tenantId) throw new HttpError(401, 'invalid API key');
    request.tenantId = tenantId;
  };
}

/**
 * Scopes the routes of a plugin to the tenant of the bearer key: declares `request.tenantId` (fastify's
 * decorateRequest, so every request object has the same shape) and sets it before any handler runs (401 otherwise).
 * With `after`, a handler runs once the writes the gateway finishes after answering (pendingWrites.ts) are done —
 * the named conversation's, else the tenant's: the tenant reads what it was answered, and writes after it.
 */
export function requireTenant(app: FastifyInstance, db: Kysely<Database>, after?: PendingWrites): void {
  app.decorateRequest('tenantId', '');
  const auth = tenantAuth(db);
  app.addHook(
    'preHandler',
    after
      ? async (request) => {
          await auth(request);
          // A route of one conversation waits for that conversation's writes only; any other, for the tenant's.
          const { conversationId } = (request.params ?? {}) as { conversationId?: unknown };
          await (typeof conversationId === 'string'
            ? after.settled(request.tenantId, conversationId)
            : after.settledTenant(request.tenantId));
        }
      : auth,
  );
}

export function adminAuth(adminKey: string | null) {
  return async (request: FastifyRequest): Promise<void> => {
    const given = Buffer.from(bearer(request));
    const expected = Buffer.from(adminKey ?? '');
    if (!adminKey || given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new HttpError(403, 'admin key required');
    }
  };
}
