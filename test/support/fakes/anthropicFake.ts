// A fake Anthropic Messages server (DESIGN.md §5) for the real `@anthropic-ai/sdk`: POST /v1/messages,
// non-streaming or streamed (`stream: true`: Anthropic's SSE events), and POST /v1/messages/count_tokens, with Anthropic's message and error JSON (`{type: 'error', error: {type, message}}`). Scripted per
// test, records every request.
import { type FakeServer, type RecordedRequest, startFakeServer, type WireResponse } from './fakeServer.js';
import { type ErrorStep, type FakeStep, pacing, type ReplyStep } from './script.js';

export interface AnthropicFake extends FakeServer {
  /** The SDK's `baseURL` (the SDK appends `/v1/messages`). */
  readonly baseURL: string;
  messageRequests(): RecordedRequest[];
}

export interface AnthropicFakeOptions {
  /** When set, a request without this key (`Authorization: Bearer` or `x-api-key`) gets a 401. */
  expectedApiKey?: string;
}

export const ANTHROPIC_DEFAULT_USAGE = {
  input_tokens: 1_000,
  output_tokens: 90,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  service_tier: 'standard',
};

const DEFAULT_ERROR_TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

let counter = 0;

function errorResponse(status: number, message: string, type?: string, headers: Record<string, string> = {}) {
  counter += 1;
  const requestId = `req_fake_${counter}`;
  return {
    status,
    headers: { 'request-id': requestId, ...headers },
    body: {
      type: 'error',
      error: { type: type ?? DEFAULT_ERROR_TYPES[status] ?? 'api_error', message },
      request_id: requestId,
    },
  };
}

function fromErrorStep(step: ErrorStep): WireResponse {
  return errorResponse(step.status, step.message ?? `error ${step.status}`, step.type, step.headers);
}

const STOP_REASONS: Readonly<Record<NonNullable<ReplyStep['stop']>, string>> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  truncated: 'max_tokens',
  refusal: 'refusal',
  content_filter: 'refusal',
};

function fromReplyStep(step: ReplyStep, model: string): WireResponse {
  const content: Record<string, unknown>[] = [];
  if (step.text) content.push({ type: 'text', text: step.text, citations: null });
  for (const call of step.toolCalls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input, caller: { type: 'direct' } });
  }
  const stop = step.stop ?? ((step.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop');
  counter += 1;
  return {
    status: 200,
    headers: { 'request-id': `req_fake_${counter}` },
    ...pacing(step),
    body: {
      id: `msg_fake_${counter}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: STOP_REASONS[stop],
      stop_sequence: null,
      usage: step.usage ?? ANTHROPIC_DEFAULT_USAGE,
    },
  };
}

/**
 * The message as Anthropic streams it: message_start (usage with the input tokens), per content block its start,
 * its deltas (text in pieces, a tool's input as partial JSON) and its stop, message_delta (stop reason, output
 * tokens), message_stop.
 */
function streamed(response: WireResponse): WireResponse {
  if (response.status !== 200) return response;
  const message = response.body as {
    content: Array<{ type: string; text?: string; id?: string; name?: string; input?: unknown }>;
    stop_reason: string;
    usage: { output_tokens: number };
  };
  const event = (type: string, data: Record<string, unknown>) => ({
    event: type,
    data: JSON.stringify({ type, ...data }),
  });
  const pieces = (text: string) => text.match(/[\s\S]{1,7}/g) ?? [];
  const events = [
    event('message_start', {
      message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } },
    }),
  ];
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      for (const text of pieces(block.text ?? '')) {
        events.push(event('content_block_delta', { index, delta: { type: 'text_delta', text } }));
      }
    } else {
      const start = { type: 'tool_use', id: block.id, name: block.name, input: {} };
      events.push(event('content_block_start', { index, content_block: start }));
      for (const partial_json of pieces(JSON.stringify(block.input))) {
        events.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json } }));
      }
    }
    events.push(event('content_block_stop', { index }));
  });
  events.push(
    event('message_delta', {
      delta: { stop_reason: message.stop_reason, stop_sequence: null },
      usage: { output_tokens: message.usage.output_tokens },
    }),
    event('message_stop', {}),
  );
  return { ...response, body: null, events };
}

/** `POST /v1/messages/count_tokens`: a rough count (4 characters a token) of what the request holds. */
function countTokens(request: RecordedRequest): WireResponse {
  const { system, messages, tools } = request.body as Record<string, unknown>;
  return { status: 200, body: { input_tokens: Math.ceil(JSON.stringify([system, messages, tools]).length / 4) } };
}

function presentedKey(request: RecordedRequest): string | undefined {
  const bearer = request.headers.authorization;
  if (bearer?.startsWith('Bearer ')) return bearer.slice('Bearer '.length);
  return request.headers['x-api-key'];
}

function validationError(request: RecordedRequest, options: AnthropicFakeOptions): WireResponse | null {
  if (request.method !== 'POST' || (request.path !== '/v1/messages' && request.path !== '/v1/messages/count_tokens')) {
    return errorResponse(404, `Not found: ${request.method} ${request.path}`);
  }
  if (options.expectedApiKey !== undefined && presentedKey(request) !== options.expectedApiKey) {
    return errorResponse(401, 'invalid x-api-key');
  }
  if (!request.headers['anthropic-version']) return errorResponse(400, 'anthropic-version: header is required');
  const body = request.body as Record<string, unknown> | null;
  if (!body || typeof body.model !== 'string') return errorResponse(400, 'model: Field required');
  if (typeof body.max_tokens !== 'number' && request.path === '/v1/messages') {
    return errorResponse(400, 'max_tokens: Field required');
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return errorResponse(400, 'messages: at least one message is required');
  }
  return null;
}

function respond(step: FakeStep | undefined, model: string): WireResponse | { hangMs: number | null } {
  if (!step) return errorResponse(500, 'anthropic fake: no scripted response left');
  switch (step.kind) {
    case 'reply':
      return fromReplyStep(step, model);
    case 'error':
      return fromErrorStep(step);
    case 'context_too_long':
      return errorResponse(400, 'prompt is too long: 212345 tokens > 200000 maximum', 'invalid_request_error');
    case 'hang':
      return { hangMs: step.ms ?? null };
    case 'raw':
      return { status: step.status, body: step.body, headers: step.headers ?? {} };
  }
}

export async function startAnthropicFake(options: AnthropicFakeOptions = {}): Promise<AnthropicFake> {
  const server = await startFakeServer((request, nextStep) => {
    const invalid = validationError(request, options);
    if (invalid) return invalid;
    if (request.path === '/v1/messages/count_tokens') return countTokens(request);
    const body = request.body as { model: string; stream?: boolean };
    const answer = respond(nextStep(), String(body.model));
    return body.stream === true && !('hangMs' in answer) ? streamed(answer) : answer;
  });
  return {
    ...server,
    baseURL: server.origin,
    messageRequests: () => server.requests.filter((r) => r.path === '/v1/messages'),
  };
}
