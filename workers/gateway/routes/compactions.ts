// Compaction routes (tenant key): list by status, replay one (SPEC §13.7). Schemas: contracts/http/compactions.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notReplayableReason } from '../../../contracts/compactionActivities.js';
import { errorResponses, TENANT_READ_ERRORS, TENANT_WRITE_ERRORS } from '../../../contracts/http/common.js';
import {
  CompactionList,
  CompactionParams,
  DEFAULT_COMPACTIONS_LIMIT,
  ListCompactionsQuery,
  ReplayResult,
} from '../../../contracts/http/compactions.js';
import { getCompaction, listCompactions } from '../../../infra/db/compactions.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import type { Conversations } from '../conversations.js';
import { HttpError, notFound } from '../errors.js';

export function compactionRoutes(deps: TenantRouteGate & { conversations: Conversations }): FastifyPluginAsyncTypebox {
  return async (app) => {
    requireTenant(app, tenantGate(deps, deps.conversations.pendingWrites));

    app.get(
      '/v1/compactions',
      {
        schema: {
          tags: ['compactions'],
          summary: 'List compactions, newest first; status is a comma-separated filter (e.g. fallback,failed,aborted)',
          querystring: ListCompactionsQuery,
          response: { 200: CompactionList, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request) => {
        const status = request.query.status?.split(',');
        const rows = await listCompactions(deps.readDb ?? deps.db, request.tenantId, {
          ...(status ? { status } : {}),
          limit: request.query.limit ?? DEFAULT_COMPACTIONS_LIMIT,
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
            summaryBackend: c.summary_backend,
            retentionBefore: c.retention_before,
            retentionAfter: c.retention_after,
            nativeFallback: c.native_fallback,
            summaryUsage: c.summary_usage && {
              inputTokens: c.summary_usage.input_tokens,
              outputTokens: c.summary_usage.output_tokens,
              cacheReadTokens: c.summary_usage.cache_read_tokens,
              cacheWriteTokens: c.summary_usage.cache_write_tokens,
            },
            engine: c.engine,
            engineFallback: c.engine_fallback,
            cacheRewriteTokens: c.cache_rewrite_tokens,
            cacheRecoveryTurns: c.cache_recovery_turns,
            stats: c.stats,
            createdAt: c.created_at.toISOString(),
            completedAt: c.completed_at?.toISOString() ?? null,
          })),
        };
      },
    );

    app.post(
      '/v1/compactions/:compactionId/replay',
      {
        schema: {
          tags: ['compactions'],
          summary:
            'Replay a compaction that used the fallback summary with the current summarizer (SPEC §13.7); an ' +
            'aborted or failed one committed nothing and is refused with 409',
          params: CompactionParams,
          response: { 200: ReplayResult, ...errorResponses(...TENANT_WRITE_ERRORS, 404, 409, 422, 502) },
        },
      },
      async (request) => {
        const record = await getCompaction(deps.readDb ?? deps.db, request.tenantId, request.params.compactionId);
        if (!record) throw notFound(`unknown compaction '${request.params.compactionId}'`);
        // Refused before any summarizer call: a replay whose result would be thrown away is never run.
        const refused = notReplayableReason(record);
        if (refused) throw new HttpError(409, refused);
        return deps.conversations.replayCompaction(request.tenantId, request.params.compactionId);
      },
    );
  };
}
