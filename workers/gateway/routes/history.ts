// History routes (tenant key; issue #14 §6 data lifecycle): the tenant's conversations (keyset-paged, filtered), the
// sessions of a rotated conversation with their lineage (SPEC §13.3), one session's messages, and the streamed JSONL
// export of a whole conversation. Reads only, from PostgreSQL through the read pool as the tenant role: never the
// workflow. Schemas: contracts/http/history.ts.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, TENANT_READ_ERRORS } from '../../../contracts/http/common.js';
import { ConversationParams, MessagesQuery, StoredMessages } from '../../../contracts/http/conversations.js';
import {
  ConversationList,
  DEFAULT_PAGE_LIMIT,
  ExportLines,
  ListConversationsQuery,
  SessionList,
  SessionParams,
} from '../../../contracts/http/history.js';
import { type ConversationKey, listConversations } from '../../../infra/db/conversationList.js';
import { getConversation } from '../../../infra/db/conversations.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import { getSession, listConversationSessions } from '../../../infra/db/sessions.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import { exportConversation, toSessionSummary } from '../conversationExport.js';
import { HttpError, notFound } from '../errors.js';
import { messagePage } from '../messagePage.js';
import { decodeCursor, encodeCursor } from '../pageCursor.js';
import type { PendingWrites } from '../pendingWrites.js';

const readErrors = [...TENANT_READ_ERRORS, 404] as const;

export function historyRoutes(deps: TenantRouteGate & { pendingWrites?: PendingWrites }): FastifyPluginAsyncTypebox {
  const db = deps.readDb ?? deps.db;

  async function conversationOf(tenantId: string, conversationId: string): Promise<ConversationRow> {
    const conversation = await getConversation(db, tenantId, conversationId);
    if (!conversation) throw notFound(`unknown conversation '${conversationId}'`);
    return conversation;
  }

  return async (app) => {
    requireTenant(app, tenantGate(deps, deps.pendingWrites));

    app.get(
      '/v1/conversations',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'The tenant’s conversations, newest updated first, a page at a time (limit, cursor); filters: title ' +
            'substring, model, updatedAfter / updatedBefore (exclusive)',
          querystring: ListConversationsQuery,
          response: { 200: ConversationList, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request) => {
        const q = request.query;
        const after: ConversationKey | null = q.cursor
          ? decodeCursor(q.cursor, 'conversations', '', { updatedUs: 'string', id: 'string' })
          : null;
        if (after && !/^-?\d{1,19}$/.test(after.updatedUs))
          throw new HttpError(400, 'querystring.cursor is not a cursor of this list');
        const limit = q.limit ?? DEFAULT_PAGE_LIMIT;
        const filter = {
          ...(q.title !== undefined ? { titleContains: q.title } : {}),
          ...(q.model !== undefined ? { model: q.model } : {}),
          ...(q.updatedAfter !== undefined ? { updatedAfter: new Date(q.updatedAfter) } : {}),
          ...(q.updatedBefore !== undefined ? { updatedBefore: new Date(q.updatedBefore) } : {}),
        };
        const page = await listConversations(db, request.tenantId, filter, limit, after);
        const last = page.rows.at(-1);
        return {
          conversations: page.rows.map((c) => ({
            conversationId: c.id,
            currentSessionId: c.currentSessionId,
            model: c.model,
            provider: c.provider,
            source: c.source,
            title: c.title,
            createdAt: c.createdAt.toISOString(),
            updatedAt: c.updatedAt.toISOString(),
            activeMessages: c.activeMessages,
            activeTokens: c.activeTokens,
            compactions: c.compactions,
          })),
          nextCursor: page.more && last ? encodeCursor('conversations', '', { ...last.key }) : null,
        };
      },
    );

    app.get(
      '/v1/conversations/:conversationId/sessions',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'The sessions of a conversation, oldest first: lineage (parentSessionId), end reason, compression count ' +
            '— the earlier sessions of a rotated conversation (compression.in_place: false) stay readable',
          params: ConversationParams,
          response: { 200: SessionList, ...errorResponses(...readErrors) },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        const conversation = await conversationOf(request.tenantId, conversationId);
        const sessions = await listConversationSessions(db, request.tenantId, conversationId);
        return {
          conversationId,
          currentSessionId: conversation.current_session_id,
          sessions: sessions.map((s) => toSessionSummary(s, conversation.current_session_id)),
        };
      },
    );

    app.get(
      '/v1/conversations/:conversationId/sessions/:sessionId/messages',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Messages of one session of the conversation (an ended one too): active only, or with archived rows; ' +
            'every row, or a page with limit and cursor',
          params: SessionParams,
          querystring: MessagesQuery,
          response: { 200: StoredMessages, ...errorResponses(...readErrors) },
        },
      },
      async (request) => {
        const { conversationId, sessionId } = request.params;
        const session = await getSession(db, request.tenantId, sessionId);
        if (!session || session.conversation_id !== conversationId)
          throw notFound(`conversation '${conversationId}' has no session '${sessionId}'`);
        return messagePage(db, request.tenantId, sessionId, request.query);
      },
    );

    app.get(
      '/v1/conversations/:conversationId/export',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Export the whole conversation as JSONL (application/x-ndjson), streamed: every message of every ' +
            'session with its flags, the compactions, the sessions, then an `end` line with the counts',
          params: ConversationParams,
          produces: ['application/x-ndjson'],
          response: { 200: ExportLines, ...errorResponses(...readErrors) },
        },
      },
      async (request, reply) => {
        const conversation = await conversationOf(request.tenantId, request.params.conversationId);
        const stream = Readable.from(exportConversation(db, request.tenantId, conversation));
        const file = `${conversation.id}.jsonl`;
        return reply
          .status(200)
          .type('application/x-ndjson; charset=utf-8')
          .header('content-disposition', `attachment; filename="${file}"`)
          .send(stream as unknown as string); // streamed as it is read (no schema serialises a stream)
      },
    );
  };
}
