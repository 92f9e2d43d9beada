// A fake Anthropic Messages server (DESIGN.md §5) for the real `@anthropic-ai/sdk`: POST /v1/messages,
// non-streaming or streamed (`stream: true`: Anthropic's SSE events), and POST /v1/messages/count_tokens, with Anthropic's message and error JSON (`{type: 'error', error: {type, message}}`). Scripted per
// test, records every request.
//
// The compaction beta (`compact-2026-09-04`, as @anthropic-ai/sdk documents it): a request with `compaction` is
// answered, when the script says so, by a lone `compaction` block the fake signs (stop_reason `compaction`, its cost
// in `usage.iterations`); and the documented limits are enforced on every request — the beta header for the field and
// for blocks, never with `context_management`, no unfinished assistant turn at the end of a compaction request, one
// block with content, first in `messages`, sent back with its content and signature unchanged.
import { createHash } from 'node:crypto';
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
  /** Refuse the compaction beta header as an endpoint that does not know it does (400 naming the header). */
  refuseCompactionBeta?: boolean;
}

export const COMPACTION_BETA = 'compact-2026-09-04';

/** The fake's signature of a block: what a block sent back must still carry for its content. */
export function fakeBlockSignature(content: string | null, encrypted: string | null): string {
  return `sig_${createHash('sha256')
    .update(`${content ?? ''}\u0000${encrypted ?? ''}`)
    .digest('hex')
    .slice(0, 24)}`;
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

function coded(status: number, errorCode: string, message: string): WireResponse {
  const response = errorResponse(status, message, status === 529 ? 'overloaded_error' : 'invalid_request_error');
  const body = response.body as { error: Record<string, unknown> };
  body.error.details = { error_code: errorCode };
  return response;
}

/** An error step; its `code` becomes Anthropic's `error.details.error_code` (e.g. 529 `compaction_unavailable`). */
function fromErrorStep(step: ErrorStep): WireResponse {
  const response = errorResponse(step.status, step.message ?? `error ${step.status}`, step.type, step.headers);
  if (step.code) (response.body as { error: Record<string, unknown> }).error.details = { error_code: step.code };
  return response;
}

const STOP_REASONS: Readonly<Record<NonNullable<ReplyStep['stop']>, string>> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  truncated: 'max_tokens',
  refusal: 'refusal',
  content_filter: 'refusal',
};

/** A 200 answer: one message with this content, stop reason and usage. */
function messageAnswer(
  step: ReplyStep,
  model: string,
  content: Record<string, unknown>[],
  stopReason: string,
  usage: Record<string, unknown>,
): WireResponse {
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
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    },
  };
}

/** A compaction request's answer: the signed block alone; its cost in `usage.iterations`, not in the top level. */
function compactionAnswer(step: ReplyStep, model: string): WireResponse {
  const { content, encrypted = null } = step.compactionBlock!;
  const block = {
    type: 'compaction',
    content,
    encrypted_content: encrypted,
    signature: fakeBlockSignature(content, encrypted),
    tool_changes: [],
  };
  const cost = step.usage ?? { input_tokens: 12_000, output_tokens: 800 };
  const iteration = {
    type: 'compaction',
    cache_creation: null,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  return messageAnswer(step, model, [block], 'compaction', {
    input_tokens: 0,
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    iterations: [{ ...iteration, ...cost }],
  });
}

function fromReplyStep(step: ReplyStep, model: string): WireResponse {
  if (step.compactionBlock) return compactionAnswer(step, model);
  const content: Record<string, unknown>[] = [];
  if (step.text) content.push({ type: 'text', text: step.text, citations: null });
  for (const call of step.toolCalls ?? []) {
    content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input, caller: { type: 'direct' } });
  }
  const stop = step.stop ?? ((step.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop');
  return messageAnswer(step, model, content, STOP_REASONS[stop], step.usage ?? ANTHROPIC_DEFAULT_USAGE);
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
  return compactionLimits(request, body, options);
}

type Block = { type?: string; content?: string | null; encrypted_content?: string | null; signature?: string | null };

/** The compaction beta's rules, as the SDK documents them (CompactionBlock*Error, CompactionIncompleteTurnError). */
function compactionLimits(
  request: RecordedRequest,
  body: Record<string, unknown>,
  options: AnthropicFakeOptions,
): WireResponse | null {
  const betas = String(request.headers['anthropic-beta'] ?? '')
    .split(',')
    .map((b) => b.trim());
  const beta = betas.includes(COMPACTION_BETA);
  if (beta && options.refuseCompactionBeta) {
    return errorResponse(400, `Unexpected value(s) \`${COMPACTION_BETA}\` for the \`anthropic-beta\` header.`);
  }
  const messages = body.messages as Array<{ role: string; content: unknown }>;
  const blocks = messages.flatMap((message, m) =>
    Array.isArray(message.content)
      ? (message.content as Block[]).flatMap((block, b) => (block.type === 'compaction' ? [{ block, m, b }] : []))
      : [],
  );
  if ((body.compaction !== undefined || blocks.length > 0) && !beta) {
    return errorResponse(400, 'compaction: Extra inputs are not permitted');
  }
  if (body.compaction !== undefined && body.context_management !== undefined) {
    return errorResponse(400, 'compaction: cannot be combined with context_management');
  }
  if (blocks.filter(({ block }) => block.content != null).length > 1) {
    return coded(400, 'compaction_block_ambiguous', 'messages holds more than one compaction block with content');
  }
  for (const { block, m, b } of blocks) {
    if (m !== 0 || b !== 0 || messages[0]?.role === 'system') {
      return coded(400, 'compaction_block_misplaced', 'the compaction block is not the first block of messages');
    }
    if (block.signature !== fakeBlockSignature(block.content ?? null, block.encrypted_content ?? null)) {
      return coded(400, 'compaction_content_mismatch', "the compaction block's content differs from its signature");
    }
  }
  const last = messages.at(-1);
  const lastBlocks = Array.isArray(last?.content) ? (last.content as Block[]) : [];
  if (body.compaction !== undefined && last?.role === 'assistant' && lastBlocks.at(-1)?.type === 'tool_use') {
    return coded(400, 'compaction_incomplete_turn', 'the compaction request ends on an unfinished assistant turn');
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
