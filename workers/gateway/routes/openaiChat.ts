// Drop-in OpenAI endpoints (issue #12): `POST /v1/chat/completions` and `POST /v1/responses` with a tenant key (`Authorization:
// Bearer …` or `x-api-key`), streamed or not (workers/gateway/dropin/openaiChat.ts). Every refusal answers in
// OpenAI's dialect, `{error: {message, type, param, code}}`, with the status the gateway gives it elsewhere; the
// provider's own errors are passed on as it sent them (status, `retry-after`, error object). Schemas:
// contracts/http/openaiChat.ts.
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ChatCompletionResponse,
  ChatCompletionsBody,
  ChatCompletionsHeaders,
  OpenAIErrorBody,
  ResponseObjectBody,
  ResponsesBody,
} from '../../../contracts/http/openaiChat.js';
import type { CompletionBody } from '../../../infra/llm/openaiPassthrough.js';
import type { ResponsesBody as PassthroughResponsesBody } from '../../../infra/llm/responsesPassthrough.js';
import { requireTenant, tenantGate } from '../auth.js';
import { OpenAIChatCompletions } from '../dropin/openaiChat.js';
import { OpenAIResponses } from '../dropin/openaiResponses.js';
import { type DropinError, type DropinRouteDeps, dropinDeps, dropinErrorHandler } from '../dropin/routeSupport.js';
import { asEventStream, sseData } from '../sse.js';

/**
 * What this route can answer besides 200: refusals of the request (400, 401, 403, 413, 415; 404, 409 and 422 from the
 * store and the provider configuration), the provider's own errors passed on (429, 5xx), outages (503).
 */
const ERROR_MEANINGS: Readonly<Record<number, string>> = {
  400: 'the request is malformed (param names the field); nothing is stored',
  401: 'missing or unknown tenant key',
  403: 'a read-only key: this route stores messages and needs scope full',
  404: 'unknown model or conversation (also passed on from the provider)',
  409: 'the conversation refused the history (also passed on from the provider)',
  413: 'the request body is too large',
  415: 'the body is not JSON in UTF-8',
  422: 'the provider cannot be used (no API key configured), or refused the request',
  429: 'over a request limit of the tenant or the key, or the provider’s rate limit passed on; with retry-after',
  500: 'the provider’s own server error, passed on',
  502: 'the provider answered with a bad gateway error, passed on',
  503: 'the database, Temporal or the provider is unavailable: retry after Retry-After',
};
const openAIErrorResponses = Object.fromEntries(
  Object.entries(ERROR_MEANINGS).map(([status, description]) => [status, { ...OpenAIErrorBody, description }]),
);

/** OpenAI's error `type` for a status the gateway answers itself. */
function errorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status === 403) return 'permission_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

/** OpenAI's error body: the provider's own when it sent one, else the gateway's. */
function openAIError(error: DropinError): OpenAIErrorBody {
  const passed = error.providerBody as OpenAIErrorBody | null;
  if (passed?.error) return passed;
  const code = error.unreachable
    ? 'upstream_unavailable'
    : error.status === 401
      ? 'invalid_api_key'
      : error.status === 429
        ? 'rate_limit_exceeded'
        : null;
  return { error: { message: error.message, type: errorType(error.status), param: error.param, code } };
}

/** Server-Sent Events of `payloads` (`data: …` each). */
async function* sse(payloads: AsyncIterable<string>): AsyncGenerator<string> {
  for await (const payload of payloads) yield sseData(payload);
}

export function openAIChatRoutes(deps: DropinRouteDeps): FastifyPluginAsyncTypebox {
  const service = new OpenAIChatCompletions(dropinDeps(deps));
  const responses = new OpenAIResponses(dropinDeps(deps));
  return async (app) => {
    requireTenant(app, tenantGate(deps));
    app.setErrorHandler(dropinErrorHandler(openAIError));
    app.post(
      '/v1/chat/completions',
      {
        schema: {
          tags: ['drop-in'],
          summary:
            'OpenAI Chat Completions, drop-in: the whole history each time; stored, compacted when due, sent to the ' +
            'provider of the model (the client’s own request while never compacted); `stream: true` for SSE',
          headers: ChatCompletionsHeaders,
          body: ChatCompletionsBody,
          response: { 200: ChatCompletionResponse, ...openAIErrorResponses },
        },
      },
      async (request, reply) => {
        const header = request.headers['x-conversation-id'];
        const answer = await service.complete(
          request.tenantId,
          request.body as CompletionBody,
          typeof header === 'string' ? header : undefined,
        );
        if (answer.conversationId) void reply.header('x-conversation-id', answer.conversationId);
        if (answer.kind === 'json')
          return reply.status(200).send(answer.completion as unknown as Record<string, unknown>);
        asEventStream(reply);
        // A stream is written as it comes (no response schema applies to it).
        return reply.status(200).send(Readable.from(sse(answer.events)) as unknown as Record<string, unknown>);
      },
    );
    app.post(
      '/v1/responses',
      {
        schema: {
          tags: ['drop-in'],
          summary:
            'OpenAI Responses, drop-in (`store: false`, the whole input each time): stored, compacted when due, sent ' +
            'to the provider of the model (the client’s own request while never compacted); `stream: true` for SSE',
          headers: ChatCompletionsHeaders,
          body: ResponsesBody,
          response: { 200: ResponseObjectBody, ...openAIErrorResponses },
        },
      },
      async (request, reply) => {
        const header = request.headers['x-conversation-id'];
        const answer = await responses.create(
          request.tenantId,
          request.body as PassthroughResponsesBody,
          typeof header === 'string' ? header : undefined,
        );
        if (answer.conversationId) void reply.header('x-conversation-id', answer.conversationId);
        if (answer.reasoningDropped > 0)
          void reply.header('x-reasoning-items-dropped', String(answer.reasoningDropped));
        if (answer.kind === 'json')
          return reply.status(200).send(answer.response as unknown as Record<string, unknown>);
        asEventStream(reply);
        return reply.status(200).send(Readable.from(answer.frames) as unknown as Record<string, unknown>);
      },
    );
  };
}
