// Drop-in Anthropic Messages (issue #12): `POST /v1/messages` (streamed or not) and `POST /v1/messages/count_tokens`
// with a tenant key (`x-api-key`, as Anthropic's clients send it, or `Authorization: Bearer …`);
// workers/gateway/dropin/anthropicMessages.ts. Every refusal answers in Anthropic's dialect, `{type: 'error', error:
// {type, message}}`, with the status the gateway gives it elsewhere; the provider's own errors are passed on as it
// sent them. Schemas: contracts/http/anthropicMessages.ts.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  AnthropicErrorBody,
  CountTokensBody,
  MessageResponse,
  MessagesBody,
  TokenCountResponse,
} from '../../../contracts/http/anthropicMessages.js';
import type { MessagesBody as PassthroughBody } from '../../../infra/llm/anthropicPassthrough.js';
import { requireTenant, tenantGate } from '../auth.js';
import { AnthropicMessages } from '../dropin/anthropicMessages.js';
import { type DropinError, type DropinRouteDeps, dropinDeps, dropinErrorHandler } from '../dropin/routeSupport.js';
import { asEventStream } from '../sse.js';

/** Anthropic's error `type` for a status the gateway answers itself. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
};

const ERROR_MEANINGS: Readonly<Record<number, string>> = {
  400: 'the request is malformed (the message names the field); nothing is stored',
  401: 'missing or unknown tenant key',
  403: 'a read-only key: this route needs scope full',
  404: 'unknown model (also passed on from the provider)',
  409: 'the conversation refused the history',
  413: 'the request body is too large',
  415: 'the body is not JSON in UTF-8',
  422: 'the provider cannot be used (no API key configured)',
  429: 'over a request limit of the tenant or the key, or the provider’s rate limit passed on; with retry-after',
  500: 'the provider’s own server error, passed on',
  503: 'the database, Temporal or the provider is unavailable: retry after Retry-After',
  529: 'the provider is overloaded, passed on',
};
const errorResponses = Object.fromEntries(
  Object.entries(ERROR_MEANINGS).map(([status, description]) => [status, { ...AnthropicErrorBody, description }]),
);

/** Anthropic's error body: the provider's own when it sent one, else the gateway's. */
function anthropicError(error: DropinError): AnthropicErrorBody {
  const passed = error.providerBody as AnthropicErrorBody | null;
  if (passed?.type === 'error' && passed.error) return passed;
  return { type: 'error', error: { type: ERROR_TYPES[error.status] ?? 'api_error', message: error.message } };
}

export function anthropicMessagesRoutes(deps: DropinRouteDeps): FastifyPluginAsyncTypebox {
  const service = new AnthropicMessages(dropinDeps(deps));
  return async (app) => {
    requireTenant(app, tenantGate(deps));
    app.setErrorHandler(dropinErrorHandler(anthropicError));
    app.post(
      '/v1/messages',
      {
        schema: {
          tags: ['drop-in'],
          summary:
            'Anthropic Messages, drop-in: the whole history each time; stored, compacted when due, sent to the ' +
            'provider of the model (the client’s own request while never compacted); `stream: true` for SSE',
          body: MessagesBody,
          response: { 200: MessageResponse, ...errorResponses },
        },
      },
      async (request, reply) => {
        const answer = await service.create(request.tenantId, request.body as PassthroughBody, request.headers);
        if (answer.conversationId) void reply.header('x-conversation-id', answer.conversationId);
        if (answer.thinkingDropped > 0) void reply.header('x-thinking-blocks-dropped', String(answer.thinkingDropped));
        if (answer.kind === 'json') return reply.status(200).send(answer.message as unknown as Record<string, unknown>);
        asEventStream(reply);
        // A stream is written as it comes (no response schema applies to it).
        return reply.status(200).send(Readable.from(answer.frames) as unknown as Record<string, unknown>);
      },
    );
    app.post(
      '/v1/messages/count_tokens',
      {
        schema: {
          tags: ['drop-in'],
          summary: 'Anthropic token count of a request, by the provider of the model (nothing is stored)',
          body: CountTokensBody,
          response: { 200: TokenCountResponse, ...errorResponses },
        },
      },
      async (request) =>
        (await service.countTokens(request.body as PassthroughBody, request.headers)) as unknown as Record<
          string,
          unknown
        >,
    );
  };
}
