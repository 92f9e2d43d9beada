// Compaction routes (tenant key): list by status, replay one (SPEC §13.7).
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { notReplayableReason } from '../../../activities/replay.js';
import type { Conversations } from '../../../clients/conversations.js';
import { COMPACTION_STATUSES } from '../../../contracts/compaction.js';
import { getCompaction, listCompactions } from '../../../infra/db/compactions.js';
import type { Database } from '../../../infra/db/schema.js';
import { tenantAuth } from '../auth.js';
import { HttpError, notFound } from '../errors.js';
import { offsetSchema } from '../schemas.js';

const STATUSES = COMPACTION_STATUSES;

export function compactionRoutes(deps: { db: Kysely<Database>; conversations: Conversations }) {
  return async (app: FastifyInstance) => {
    app.addHook('preHandler', tenantAuth(deps.db));

    app.get<{ Querystring: { status?: string; limit?: number; offset?: number } }>(
      '/v1/compactions',
      {
        schema: {
          tags: ['compactions'],
          summary: 'List compactions, newest first; status is a comma-separated filter (e.g. fallback,failed,aborted)',
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: {
              status: { type: 'string', pattern: `^(${STATUSES.join('|')})(,(${STATUSES.join('|')}))*$` },
              limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
              offset: { ...offsetSchema, default: 0 },
            },
          },
        },
      },
      async (request) => {
        const status = request.query.status?.split(',');
        const rows = await listCompactions(deps.db, request.tenantId, {
          ...(status ? { status } : {}),
          limit: request.query.limit ?? 50,
          offset: request.query.offset ?? 0,
        });
        return {
          compactions: rows.map((c) => ({
            id: c.id,
            conversationId: c.conversation_id,
            sessionId: c.session_id,
            seq: c.seq,
            trigger: c.trigger,
            status: c.status,
            replayable: c.replayable,
            failureClass: c.failure_class,
            error: c.error,
            attempts: c.attempts,
            stats: c.stats,
            createdAt: c.created_at,
            completedAt: c.completed_at,
          })),
        };
      },
    );

    app.post<{ Params: { compactionId: string } }>(
      '/v1/compactions/:compactionId/replay',
      {
        schema: {
          tags: ['compactions'],
          summary:
            'Replay a compaction that used the fallback summary with the current summarizer (SPEC §13.7); an ' +
            'aborted or failed one committed nothing and is refused with 409',
          params: {
            type: 'object',
            required: ['compactionId'],
            properties: { compactionId: { type: 'string', format: 'uuid' } },
          },
        },
      },
      async (request) => {
        const record = await getCompaction(deps.db, request.tenantId, request.params.compactionId);
        if (!record) throw notFound(`unknown compaction '${request.params.compactionId}'`);
        // Refused before any summarizer call: a replay whose result would be thrown away is never run.
        const refused = notReplayableReason(record);
        if (refused) throw new HttpError(409, refused);
        return deps.conversations.replayCompaction(request.tenantId, request.params.compactionId);
      },
    );
  };
}
