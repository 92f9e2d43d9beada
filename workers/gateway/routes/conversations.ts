// Conversation routes (tenant key): create, post messages, prepared context, manual compress, status, messages.
// Accepted means stored: a batch is committed to PostgreSQL before 202; reads come from PostgreSQL (never the
// worker); what needs the workflow waits a bounded time, then answers 503 with Retry-After (issue #9 §6).
// Schemas: contracts/http/conversations.ts.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { SubmitMessages } from '../../../contracts/conversation.js';
import { errorResponses, TENANT_READ_ERRORS, TENANT_WRITE_ERRORS } from '../../../contracts/http/common.js';
import {
  AcceptedMessages,
  CompactBody,
  ContextQuery,
  ConversationParams,
  CreateConversationBody,
  CreatedConversation,
  MessageParams,
  MessagesAnswer,
  MessagesQuery,
  PinnedMessage,
  PostMessagesBody,
  PreparedContext,
  StoredMessages,
} from '../../../contracts/http/conversations.js';
import { CompactionReport, PublishedStatus } from '../../../contracts/http/status.js';
import { type CacheTtl, prepareContext } from '../../../engine/index.js';
import { loadTranscript, setMessagePinned } from '../../../infra/db/messages.js';
import { cachingRouteFor, type ProvidersConfig } from '../../../infra/llm/providers.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import type { Conversations } from '../conversations.js';
import { HttpError, notFound } from '../errors.js';
import { messagePage } from '../messagePage.js';
import { asEventStream } from '../sse.js';
import { streamTurn } from '../turnStream.js';

export interface ConversationRouteDeps extends TenantRouteGate {
  conversations: Conversations;
  cacheTtl: CacheTtl | null;
  /** config.yaml `providers:` (their caching routes decide the markers of the prepared context); null: none. */
  providers?: ProvidersConfig | null;
  defaultModel: { model: string; provider: string | null; contextLength: number | null };
}

const readErrors = TENANT_READ_ERRORS;
const writeErrors = TENANT_WRITE_ERRORS;

export function conversationRoutes(deps: ConversationRouteDeps): FastifyPluginAsyncTypebox {
  const { conversations } = deps;

  return async (app) => {
    requireTenant(app, tenantGate(deps, deps.conversations.pendingWrites));

    app.post(
      '/v1/conversations',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Create a conversation (idempotent for a given conversationId)',
          body: CreateConversationBody,
          response: { 201: CreatedConversation, ...errorResponses(...writeErrors) },
        },
      },
      async (request, reply) => {
        const body = request.body ?? {};
        const conversationId = body.conversationId ?? randomUUID();
        await conversations.create(request.tenantId, conversationId, {
          model: body.model ?? deps.defaultModel.model,
          provider: body.provider ?? deps.defaultModel.provider,
          contextLength: body.contextLength ?? (body.model ? null : deps.defaultModel.contextLength),
          source: body.source ?? 'api',
          title: body.title ?? null,
        });
        const status = await conversations.status(request.tenantId, conversationId);
        return reply.status(201).send({ conversationId, status });
      },
    );

    app.post(
      '/v1/conversations/:conversationId/messages',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Append messages (user, or assistant/tool with the reported usage); idempotency key per message, unique ' +
            'per conversation (the same key with another message is 409). 202 once stored. With respond: true the ' +
            'system runs the agent turn and answers with the reply; with stream: true as Server-Sent Events ' +
            '(text/event-stream).',
          params: ConversationParams,
          body: PostMessagesBody,
          response: {
            202: AcceptedMessages,
            200: MessagesAnswer,
            ...errorResponses(...writeErrors, 404, 409, 422, 502),
          },
        },
      },
      async (request, reply) => {
        const { conversationId } = request.params;
        const { tenantId } = request;
        if (request.body.stream && !request.body.respond) throw new HttpError(400, 'stream needs respond: true');
        if (request.body.respond) {
          if (request.body.usage) throw new HttpError(400, 'usage is reported by the provider when respond is true');
          const accepted = request.body.messages.length;
          const turnRequest = {
            messages: request.body.messages,
            ...(request.body.tools ? { tools: request.body.tools } : {}),
          };
          if (request.body.stream) {
            const events = await streamTurn(
              (observer) => conversations.chatTurn(tenantId, conversationId, { ...turnRequest, observer }),
              { accepted, conversationId },
            );
            // An event stream is written as it comes (no response schema applies to it).
            return asEventStream(reply)
              .status(200)
              .send(events as unknown as Record<string, unknown>);
          }
          const turn = await conversations.chatTurn(tenantId, conversationId, turnRequest);
          return reply.status(200).send({ accepted, ...turn });
        }
        const batch: SubmitMessages = { messages: request.body.messages };
        if (request.body.usage) batch.usage = request.body.usage;
        const stored = await conversations.submit(tenantId, conversationId, batch);
        const accepted = {
          accepted: batch.messages.length,
          stored: stored.rows,
          duplicates: batch.messages.length - stored.rows,
        };
        if (request.body.wait) {
          return reply.status(200).send({ ...accepted, status: await conversations.sync(tenantId, conversationId) });
        }
        return reply.status(202).send(accepted);
      },
    );

    app.get(
      '/v1/conversations/:conversationId/context',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'The prepared context: compacted, sanitised, cache-marked message list for a model, after every ' +
            'decision due for the accepted messages (503 with Retry-After when the worker does not catch up)',
          params: ConversationParams,
          querystring: ContextQuery,
          response: { 200: PreparedContext, ...errorResponses(...readErrors, 404) },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        const status = await conversations.syncForRead(request.tenantId, conversationId);
        const model = request.query.model ?? status.model;
        const provider = request.query.provider || status.provider || null;
        const rows = await loadTranscript(deps.readDb ?? deps.db, request.tenantId, status.sessionId);
        // The same prepared context the agent turn sends (engine/prepareContext.ts), for the same provider route.
        const { messages, caching } = prepareContext(
          rows.map((r) => r.message),
          { model, cachingRoute: cachingRouteFor(deps.providers ?? null, provider), cacheTtl: deps.cacheTtl },
        );
        return {
          conversationId,
          sessionId: status.sessionId,
          model,
          provider,
          promptCaching: { enabled: caching.enabled, reason: caching.reason, line: caching.line },
          estimatedTokens: status.contextTokens,
          messages,
        };
      },
    );

    app.post(
      '/v1/conversations/:conversationId/compact',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Manual compress (forced), with an optional focus topic',
          params: ConversationParams,
          body: CompactBody,
          response: { 200: CompactionReport, ...errorResponses(...writeErrors, 404, 422, 502) },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        const focusTopic = request.body?.focusTopic;
        return conversations.compact(request.tenantId, conversationId, focusTopic ? { focusTopic } : {});
      },
    );

    app.get(
      '/v1/conversations/:conversationId/status',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Status: tokens, threshold, usage, compactions — as last published by the conversation workflow, with ' +
            'batchSeq (accepted batches) and appliedSeq (decided on); read from PostgreSQL, never the worker',
          params: ConversationParams,
          response: { 200: PublishedStatus, ...errorResponses(...readErrors, 404) },
        },
      },
      async (request) => conversations.status(request.tenantId, request.params.conversationId),
    );

    app.get(
      '/v1/conversations/:conversationId/messages',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Messages of the current session: active only (position order), or with archived (compacted) rows (id ' +
            'order); every row, or a page with limit and cursor',
          params: ConversationParams,
          querystring: MessagesQuery,
          response: { 200: StoredMessages, ...errorResponses(...readErrors, 404) },
        },
      },
      async (request) => {
        const status = await conversations.status(request.tenantId, request.params.conversationId);
        return messagePage(deps.readDb ?? deps.db, request.tenantId, status.sessionId, request.query);
      },
    );

    // Operators pin a message so that a compaction that summarises it puts it back after the summary, word for word,
    // when the tenant's `compression.rehydrate_pinned` is on (SPEC §19).
    for (const [method, pinned] of [
      ['PUT', true],
      ['DELETE', false],
    ] as const) {
      app.route({
        method,
        url: '/v1/conversations/:conversationId/messages/:messageId/pin',
        schema: {
          tags: ['conversations'],
          summary: pinned ? 'Pin a message (re-injected after a summary with rehydrate_pinned)' : 'Unpin a message',
          params: MessageParams,
          response: { 200: PinnedMessage, ...errorResponses(...readErrors, 404) },
        },
        handler: async (request) => {
          const { conversationId, messageId } = request.params;
          const id = await setMessagePinned(deps.db, request.tenantId, conversationId, messageId, pinned);
          if (id === null) throw notFound(`conversation ${conversationId} has no message ${messageId}`);
          return { messageId: id, pinned };
        },
      });
    }
  };
}
