// Erasure routes (admin key; issue #14 §6 data lifecycle): erase a conversation or a whole tenant — PostgreSQL rows
// and Temporal workflows — after a confirmation that repeats the id (400 naming `confirm` otherwise), and read the
// audit trail. Erasure runs as the owner role (the tenant role cannot delete). Schemas: contracts/http/erasure.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Client } from '@temporalio/client';
import type { Kysely } from 'kysely';
import { TenantParams } from '../../../contracts/http/admin.js';
import { errorResponses } from '../../../contracts/http/common.js';
import {
  type EraseBody,
  EraseBody as EraseBodySchema,
  Erasure,
  ErasureList,
  ListErasuresQuery,
  TenantConversationParams,
} from '../../../contracts/http/erasure.js';
import { DEFAULT_PAGE_LIMIT } from '../../../contracts/http/history.js';
import { listErasures } from '../../../infra/db/erasure.js';
import type { KeyCache } from '../../../infra/db/keyCache.js';
import type { Database } from '../../../infra/db/schema.js';
import { adminAuth, forgetKeysOnWrite } from '../auth.js';
import { erase, erasureOf } from '../erasure.js';
import { HttpError } from '../errors.js';
import { decodeCursor, encodeCursor } from '../pageCursor.js';

const adminErrors = [400, 401, 403, 413, 415, 500, 503] as const;

function confirmed(body: EraseBody | undefined, id: string, what: string): EraseBody {
  if (body?.confirm !== id) throw new HttpError(400, `body.confirm must repeat the ${what} id '${id}' to erase it`);
  return body;
}

export function erasureRoutes(deps: {
  db: Kysely<Database>;
  /** The admin keys (the current one, and the previous one while rotating): auth.ts adminKeysOf. */
  adminKeys: readonly string[];
  temporal: Client;
  /** The tenant keys this gateway keeps: an erasure forgets them (auth.ts forgetKeysOnWrite). */
  keys?: KeyCache;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    forgetKeysOnWrite(app, deps.keys);
    const closing = new AbortController();
    app.addHook('onClose', async () => closing.abort());
    const erasure = {
      db: deps.db,
      client: deps.temporal,
      signal: closing.signal,
      onBackgroundError: (err: unknown) => app.log.error({ err }, 'an erasure could not confirm Temporal deletions'),
    };
    const { db } = deps;
    app.addHook('preHandler', adminAuth(deps.adminKeys));
    // No body at all is refused like an empty one: by naming `confirm`.
    app.addHook('preValidation', async (request) => {
      if (request.method === 'DELETE' && (request.body === undefined || request.body === null)) request.body = {};
    });

    app.delete(
      '/v1/tenants/:tenantId/conversations/:conversationId',
      {
        schema: {
          tags: ['admin'],
          summary:
            'Erase a conversation: every row of it in PostgreSQL (messages, row state, sessions, compactions, ' +
            'events, turns) and its Temporal workflows; body.confirm must repeat the conversation id; audited',
          params: TenantConversationParams,
          body: EraseBodySchema,
          response: { 200: Erasure, ...errorResponses(...adminErrors) },
        },
      },
      async (request) => {
        const { tenantId, conversationId } = request.params;
        const body = confirmed(request.body, conversationId, 'conversation');
        return erase(erasure, {
          tenantId,
          conversationId,
          requestedBy: body.requestedBy ?? 'admin',
          reason: body.reason ?? null,
        });
      },
    );

    app.delete(
      '/v1/tenants/:tenantId',
      {
        schema: {
          tags: ['admin'],
          summary:
            'Erase a tenant: every row of it in PostgreSQL (its conversations, API keys, markers, the tenant row) ' +
            'and its Temporal workflows; body.confirm must repeat the tenant id; audited',
          params: TenantParams,
          body: EraseBodySchema,
          response: { 200: Erasure, ...errorResponses(...adminErrors) },
        },
      },
      async (request) => {
        const { tenantId } = request.params;
        const body = confirmed(request.body, tenantId, 'tenant');
        return erase(erasure, { tenantId, requestedBy: body.requestedBy ?? 'admin', reason: body.reason ?? null });
      },
    );

    app.get(
      '/v1/erasures',
      {
        schema: {
          tags: ['admin'],
          summary: 'The audit trail of erasures, newest first (optionally of one tenant), paged',
          querystring: ListErasuresQuery,
          response: { 200: ErasureList, ...errorResponses(400, 401, 403, 500, 503) },
        },
      },
      async (request) => {
        const { tenantId, cursor } = request.query;
        const limit = request.query.limit ?? DEFAULT_PAGE_LIMIT;
        const before = cursor ? decodeCursor(cursor, 'erasures', tenantId ?? '', { id: 'number' }).id : undefined;
        const rows = await listErasures(db, {
          limit,
          ...(tenantId !== undefined ? { tenantId } : {}),
          ...(before !== undefined ? { beforeId: before } : {}),
        });
        const page = rows.slice(0, limit).map(erasureOf);
        const last = page.at(-1);
        return {
          erasures: page,
          nextCursor:
            rows.length > limit && last ? encodeCursor('erasures', tenantId ?? '', { id: last.erasureId }) : null,
        };
      },
    );
  };
}
