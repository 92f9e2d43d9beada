// Conversation routes (tenant key): create, post messages, prepared context, manual compress, status, messages.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import {
  applyAnthropicCacheControl,
  type CacheTtl,
  type ChatMessage,
  promptCachingState,
  sanitizeToolPairs,
} from '../../../engine/index.js';
import { listMessages, loadTranscript } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import type { ConversationClient } from '../../../infra/temporal/conversationClient.js';
import type { ChatTurnRequest, IncomingMessage, SubmitMessages } from '../../../workflows/definitions.js';

type ChatTool = NonNullable<ChatTurnRequest['tools']>[number];

import { tenantAuth } from '../auth.js';
import { HttpError, notFound } from '../errors.js';
import { chatMessageSchema, conversationIdParam, errorSchema, statusSchema, usageSchema } from '../schemas.js';

export interface ConversationRouteDeps {
  db: Kysely<Database>;
  conversations: ConversationClient;
  cacheTtl: CacheTtl | null;
  defaultModel: { model: string; provider: string | null; contextLength: number | null };
}

type Params = { conversationId: string };

const createBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    conversationId: conversationIdParam.properties.conversationId,
    model: { type: 'string', minLength: 1, maxLength: 200 },
    provider: { type: 'string', minLength: 1, maxLength: 100 },
    contextLength: { type: 'integer', minimum: 1 },
    source: { type: 'string', minLength: 1, maxLength: 64 },
    title: { type: 'string', maxLength: 500 },
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
        properties: { message: chatMessageSchema, idempotencyKey: { type: 'string', minLength: 1, maxLength: 200 } },
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

  async function requireRunning(tenantId: string, conversationId: string): Promise<void> {
    if (!(await conversations.isRunning(tenantId, conversationId))) {
      throw notFound(`unknown conversation '${conversationId}'`);
    }
  }

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
          response: { 201: statusSchema, 400: errorSchema, 422: errorSchema },
        },
      },
      async (request, reply) => {
        const body = request.body ?? {};
        const conversationId = body.conversationId ?? randomUUID();
        await conversations.start(request.tenantId, conversationId, {
          model: body.model ?? deps.defaultModel.model,
          provider: body.provider ?? deps.defaultModel.provider,
          contextLength: body.contextLength ?? (body.model ? null : deps.defaultModel.contextLength),
          source: body.source ?? 'api',
          title: body.title ?? null,
        });
        const status = await conversations.sync(request.tenantId, conversationId);
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
            'Append messages (user, or assistant/tool with the reported usage); idempotency key per message. ' +
            'With respond: true the system runs the agent turn and answers with the reply.',
          params: conversationIdParam,
          body: messagesBody,
          response: { 202: statusSchema, 200: statusSchema, 400: errorSchema, 404: errorSchema },
        },
      },
      async (request, reply) => {
        const { conversationId } = request.params;
        await requireRunning(request.tenantId, conversationId);
        if (request.body.respond) {
          if (request.body.usage) throw new HttpError(400, 'usage is reported by the provider when respond is true');
          const turn = await conversations.chatTurn(request.tenantId, conversationId, {
            messages: request.body.messages,
            ...(request.body.tools ? { tools: request.body.tools } : {}),
          });
          return reply.status(200).send({ accepted: request.body.messages.length, ...turn });
        }
        const batch: SubmitMessages = { messages: request.body.messages };
        if (request.body.usage) batch.usage = request.body.usage;
        await conversations.append(request.tenantId, conversationId, batch);
        if (request.body.wait)
          return reply.status(200).send({
            accepted: batch.messages.length,
            status: await conversations.sync(request.tenantId, conversationId),
          });
        return reply.status(202).send({ accepted: batch.messages.length });
      },
    );

    app.get<{ Params: Params; Querystring: { model?: string; provider?: string } }>(
      '/v1/conversations/:conversationId/context',
      {
        schema: {
          tags: ['conversations'],
          summary: 'The prepared context: compacted, sanitised, cache-marked message list for a model',
          params: conversationIdParam,
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: { model: { type: 'string', minLength: 1 }, provider: { type: 'string', minLength: 1 } },
          },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        await requireRunning(request.tenantId, conversationId);
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
            properties: { focusTopic: { type: 'string', maxLength: 2000 } },
          },
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        await requireRunning(request.tenantId, conversationId);
        const focusTopic = request.body?.focusTopic;
        return conversations.compact(request.tenantId, conversationId, focusTopic ? { focusTopic } : {});
      },
    );

    app.get<{ Params: Params }>(
      '/v1/conversations/:conversationId/status',
      {
        schema: {
          tags: ['conversations'],
          summary: 'Status: tokens, threshold, usage, compactions',
          params: conversationIdParam,
        },
      },
      async (request) => {
        const { conversationId } = request.params;
        await requireRunning(request.tenantId, conversationId);
        return conversations.status(request.tenantId, conversationId);
      },
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
        const { conversationId } = request.params;
        await requireRunning(request.tenantId, conversationId);
        const status = await conversations.sync(request.tenantId, conversationId);
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
