// Conversation routes (tenant key): create, post messages, prepared context, manual compress, status, messages.
// Accepted means stored: a batch is committed to PostgreSQL before 202; reads come from PostgreSQL (never the
// worker); what needs the workflow waits a bounded time, then answers 503 with Retry-After (issue #9 §6).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Conversations } from '../../../clients/conversations.js';
import type { ChatTurnRequest, IncomingMessage, SubmitMessages } from '../../../contracts/conversation.js';
import {
  applyAnthropicCacheControl,
  type CacheTtl,
  type ChatMessage,
  promptCachingState,
  sanitizeToolPairs,
} from '../../../engine/index.js';
import { listMessages, loadTranscript } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { tenantAuth } from '../auth.js';
import { HttpError } from '../errors.js';
import {
  chatMessageSchema,
  conversationIdParam,
  errorSchema,
  idempotencyKeySchema,
  MAX_CONTEXT_LENGTH,
  statusSchema,
  textSchema,
  usageSchema,
} from '../schemas.js';

type ChatTool = NonNullable<ChatTurnRequest['tools']>[number];

export interface ConversationRouteDeps {
  db: Kysely<Database>;
  conversations: Conversations;
  cacheTtl: CacheTtl | null;
  defaultModel: { model: string; provider: string | null; contextLength: number | null };
}

type Params = { conversationId: string };

const createBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    conversationId: conversationIdParam.properties.conversationId,
    model: textSchema(200, 1),
    provider: textSchema(100, 1),
    contextLength: { type: 'integer', minimum: 1, maximum: MAX_CONTEXT_LENGTH },
    source: textSchema(64, 1),
    title: textSchema(500),
  },
} as const;

const messagesBody = {
  type: 'object',
  required: ['messages'],
  additionalProperties: false,
  properties: {
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['message', 'idempotencyKey'],
        additionalProperties: false,
        properties: { message: chatMessageSchema, idempotencyKey: idempotencyKeySchema },
      },
    },
    usage: usageSchema,
    wait: { type: 'boolean', description: 'Wait until the batch is processed (including any compaction it triggers)' },
    respond: {
      type: 'boolean',
      description:
        'Chat backend mode: run the main model after appending and answer with its reply (tool calls for the client ' +
        'to run; send their results the same way). Needs a configured LLM provider.',
    },
    tools: { type: 'array', items: { type: 'object' }, description: 'OpenAI-shaped function tools for respond' },
  },
} as const;

export function conversationRoutes(deps: ConversationRouteDeps) {
  const { conversations } = deps;

  return async (app: FastifyInstance) => {
    app.addHook('preHandler', tenantAuth(deps.db));

    app.post<{
      Body: {
        conversationId?: string;
        model?: string;
        provider?: string;
        contextLength?: number;
        source?: string;
        title?: string;
      };
    }>(
      '/v1/conversations',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Create a conversation (idempotent for a given conversationId)',
          body: createBody,
          response: { 201: statusSchema, 400: errorSchema, 503: errorSchema },
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

    app.post<{
      Params: Params;
      Body: {
        messages: IncomingMessage[];
        usage?: SubmitMessages['usage'];
        wait?: boolean;
        respond?: boolean;
        tools?: ChatTool[];
      };
    }>(
      '/v1/conversations/:conversationId/messages',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Append messages (user, or assistant/tool with the reported usage); idempotency key per message, unique ' +
            'per conversation (the same key with another message is 409). 202 once stored. With respond: true the ' +
            'system runs the agent turn and answers with the reply.',
          params: conversationIdParam,
          body: messagesBody,
          response: {
            202: statusSchema,
            200: statusSchema,
            400: errorSchema,
            404: errorSchema,
            409: errorSchema,
            422: errorSchema,
            503: errorSchema,
          },
        },
      },
      async (request, reply) => {
        const { conversationId } = request.params;
        const { tenantId } = request;
        if (request.body.respond) {
          if (request.body.usage) throw new HttpError(400, 'usage is reported by the provider when respond is true');
          const turn = await conversations.chatTurn(tenantId, conversationId, {
            messages: request.body.messages,
            ...(request.body.tools ? { tools: request.body.tools } : {}),
          });
          return reply.status(200).send({ accepted: request.body.messages.length, ...turn });
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

    app.get<{ Params: Params; Querystring: { model?: string; provider?: string } }>(
      '/v1/conversations/:conversationId/context',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'The prepared context: compacted, sanitised, cache-marked message list for a model, after every ' +
            'decision due for the accepted messages (503 with Retry-After when the worker does not catch up)',
          params: conversationIdParam,
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: { model: textSchema(200, 1), provider: textSchema(100, 1) },
          },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        const status = await conversations.sync(request.tenantId, conversationId);
        const model = request.query.model ?? status.model;
        const provider = request.query.provider ?? status.provider ?? '';
        const rows = await loadTranscript(deps.db, request.tenantId, status.sessionId);
        const caching = promptCachingState({ model, provider, cacheTtl: deps.cacheTtl });
        let messages: ChatMessage[] = sanitizeToolPairs(rows.map((r) => r.message));
        if (caching.enabled) {
          messages = applyAnthropicCacheControl(messages, {
            cacheTtl: caching.ttl ?? '5m',
            nativeAnthropic: caching.nativeAnthropic,
          });
        }
        return {
          conversationId,
          sessionId: status.sessionId,
          model,
          provider: provider || null,
          promptCaching: { enabled: caching.enabled, reason: caching.reason, line: caching.line },
          estimatedTokens: status.contextTokens,
          messages,
        };
      },
    );

    app.post<{ Params: Params; Body: { focusTopic?: string } }>(
      '/v1/conversations/:conversationId/compact',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Manual compress (forced), with an optional focus topic',
          params: conversationIdParam,
          body: {
            type: 'object',
            additionalProperties: false,
            properties: { focusTopic: textSchema(2000) },
          },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        const focusTopic = request.body?.focusTopic;
        return conversations.compact(request.tenantId, conversationId, focusTopic ? { focusTopic } : {});
      },
    );

    app.get<{ Params: Params }>(
      '/v1/conversations/:conversationId/status',
      {
        schema: {
          tags: ['conversations'],
          summary:
            'Status: tokens, threshold, usage, compactions — as last published by the conversation workflow, with ' +
            'batchSeq (accepted batches) and appliedSeq (decided on); read from PostgreSQL, never the worker',
          params: conversationIdParam,
        },
      },
      async (request) => conversations.status(request.tenantId, request.params.conversationId),
    );

    app.get<{ Params: Params; Querystring: { archived?: boolean } }>(
      '/v1/conversations/:conversationId/messages',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Messages of the current session: active only, or with archived (compacted) rows',
          params: conversationIdParam,
          querystring: { type: 'object', additionalProperties: false, properties: { archived: { type: 'boolean' } } },
        },
      },
      async (request) => {
        const status = await conversations.status(request.tenantId, request.params.conversationId);
        const rows = await listMessages(deps.db, request.tenantId, status.sessionId, {
          includeArchived: request.query.archived === true,
        });
        return {
          sessionId: status.sessionId,
          messages: rows.map((r) => ({
            id: r.id,
            position: r.position,
            active: r.active,
            compacted: r.compacted,
            timestamp: r.timestamp,
            message: r.message,
          })),
        };
      },
    );
  };
}
