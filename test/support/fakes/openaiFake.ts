// A fake OpenAI server (DESIGN.md §5) for the real `openai` SDK: POST /v1/chat/completions and POST /v1/responses,
// non-streaming or streamed (`stream: true`: SSE chunks as OpenAI sends them), with OpenAI's response and error
// JSON. Scripted per test, records every request.
import { type FakeServer, type RecordedRequest, startFakeServer, type WireResponse } from './fakeServer.js';
import { type ErrorStep, type FakeStep, pacing, type ReplyStep } from './script.js';

export interface OpenAIFake extends FakeServer {
  /** The SDK's `baseURL`: `<origin>/v1`. */
  readonly baseURL: string;
  /** The recorded chat-completion requests only. */
  chatRequests(): RecordedRequest[];
  /** The recorded Responses API requests only. */
  responsesRequests(): RecordedRequest[];
}

export interface OpenAIFakeOptions {
  /** When set, a request without `Authorization: Bearer <key>` gets OpenAI's 401 (and leaves the queue alone). */
  expectedApiKey?: string;
}

export const OPENAI_DEFAULT_USAGE = {
  prompt_tokens: 1_200,
  completion_tokens: 80,
  total_tokens: 1_280,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
};

const DEFAULT_ERROR_TYPES: Readonly<Record<number, { type: string; code: string | null }>> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  402: { type: 'insufficient_quota', code: 'insufficient_quota' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  408: { type: 'timeout', code: null },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

function errorResponse(
  status: number,
  message: string,
  type?: string,
  code?: string | null,
  headers = {},
  param: string | null = null,
) {
  const defaults = DEFAULT_ERROR_TYPES[status] ?? { type: 'server_error', code: null };
  return {
    status,
    headers,
    body: { error: { message, type: type ?? defaults.type, param, code: code ?? defaults.code } },
  };
}

function fromErrorStep(step: ErrorStep): WireResponse {
  const message = step.message ?? `error ${step.status}`;
  return errorResponse(step.status, message, step.type, step.code, step.headers, step.param ?? null);
}

const FINISH_REASONS: Readonly<Record<NonNullable<ReplyStep['stop']>, string>> = {
  stop: 'stop',
  tool_calls: 'tool_calls',
  truncated: 'length',
  refusal: 'stop',
  content_filter: 'content_filter',
};

let completionCounter = 0;

function fromReplyStep(step: ReplyStep, model: string): WireResponse {
  const toolCalls = (step.toolCalls ?? []).map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: JSON.stringify(call.input) },
  }));
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: step.text,
    refusal: step.refusal ?? null,
    annotations: [],
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const stop = step.stop ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  completionCounter += 1;
  return {
    status: 200,
    headers: { 'x-request-id': `req_fake_${completionCounter}` },
    ...pacing(step),
    body: {
      id: `chatcmpl-fake-${completionCounter}`,
      object: 'chat.completion',
      created: 1_760_000_000,
      model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: FINISH_REASONS[stop] }],
      usage: step.usage ?? OPENAI_DEFAULT_USAGE,
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    },
  };
}

/**
 * The completion as OpenAI streams it: the role, the content in pieces, each tool call's id and name then its
 * arguments in pieces, the finish reason; the usage chunk when `stream_options.include_usage` (then `usage: null` on
 * the others); `[DONE]`.
 */
function streamed(response: WireResponse, includeUsage: boolean): WireResponse {
  if (response.status !== 200) return response;
  const completion = response.body as {
    id: string;
    created: number;
    model: string;
    choices: Array<{ message: { content: string | null; tool_calls?: any[] }; finish_reason: string }>;
    usage: unknown;
  };
  const { message, finish_reason } = completion.choices[0] as (typeof completion.choices)[0];
  const head = {
    id: completion.id,
    object: 'chat.completion.chunk',
    created: completion.created,
    model: completion.model,
    system_fingerprint: 'fp_fake',
  };
  const usage = includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    JSON.stringify({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usage });
  const pieces = (text: string) => text.match(/[\s\S]{1,7}/g) ?? [];
  const events = [chunk({ role: 'assistant', content: message.content === null ? null : '', refusal: null })];
  for (const piece of pieces(message.content ?? '')) events.push(chunk({ content: piece }));
  (message.tool_calls ?? []).forEach((call, index) => {
    events.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
      }),
    );
    for (const piece of pieces(call.function.arguments)) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  events.push(chunk({}, finish_reason));
  if (includeUsage) {
    events.push(JSON.stringify({ ...head, choices: [], usage: completion.usage }));
  }
  events.push('[DONE]');
  return { ...response, body: null, events };
}

/**
 * The reply as a Responses API `response` object: a `compaction` item first when the step has one (server-side
 * compaction, SPEC §15.1), a message item with the text, a function_call item per call.
 */
function responseObject(step: ReplyStep, model: string): WireResponse {
  completionCounter += 1;
  const n = completionCounter;
  const output: Record<string, unknown>[] = [];
  if (step.compaction !== undefined) {
    output.push({ id: `cmp_fake_${n}`, type: 'compaction', encrypted_content: step.compaction });
  }
  if (step.text) {
    output.push({
      id: `msg_fake_${n}`,
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: step.text, annotations: [], logprobs: [] }],
    });
  }
  (step.toolCalls ?? []).forEach((call, i) => {
    output.push({
      id: `fc_fake_${n}_${i}`,
      type: 'function_call',
      status: 'completed',
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.input),
    });
  });
  const given = step.usage as
    | { input_tokens?: number; output_tokens?: number; input_tokens_details?: Record<string, number> }
    | undefined;
  const input = given?.input_tokens ?? OPENAI_DEFAULT_USAGE.prompt_tokens;
  const outputTokens = given?.output_tokens ?? OPENAI_DEFAULT_USAGE.completion_tokens;
  return {
    status: 200,
    headers: { 'x-request-id': `req_fake_${n}` },
    body: {
      id: `resp_fake_${n}`,
      object: 'response',
      created_at: 1_760_000_000,
      status: 'completed',
      model,
      output,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      usage: {
        input_tokens: input,
        input_tokens_details: { cached_tokens: 0, ...given?.input_tokens_details },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: input + outputTokens,
      },
    },
  };
}

/** A `response` as the Responses API streams it: created, each output item with its deltas, completed. */
function streamedResponse(response: WireResponse): WireResponse {
  if (response.status !== 200) return response;
  const full = response.body as { output: Array<Record<string, any>> } & Record<string, unknown>;
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>) => ({
    event: type,
    data: JSON.stringify({ type, sequence_number: sequence++, ...data }),
  });
  const pieces = (text: string) => text.match(/[\s\S]{1,7}/g) ?? [];
  const events = [event('response.created', { response: { ...full, status: 'in_progress', output: [], usage: null } })];
  full.output.forEach((item, output_index) => {
    if (item.type === 'message') {
      const text = item.content[0].text as string;
      events.push(
        event('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }),
      );
      const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      events.push(event('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part }));
      for (const delta of pieces(text)) {
        events.push(
          event('response.output_text.delta', {
            item_id: item.id,
            output_index,
            content_index: 0,
            delta,
            logprobs: [],
          }),
        );
      }
      events.push(
        event('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text, logprobs: [] }),
      );
      events.push(
        event('response.content_part.done', {
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { ...part, text },
        }),
      );
    } else if (item.type === 'compaction') {
      events.push(event('response.output_item.added', { output_index, item }));
    } else {
      events.push(
        event('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }),
      );
      for (const delta of pieces(item.arguments as string)) {
        events.push(event('response.function_call_arguments.delta', { item_id: item.id, output_index, delta }));
      }
      events.push(
        event('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments }),
      );
    }
    events.push(event('response.output_item.done', { output_index, item }));
  });
  events.push(event('response.completed', { response: full }));
  return { ...response, body: null, events };
}

function validationError(request: RecordedRequest, options: OpenAIFakeOptions): WireResponse | null {
  const responses = request.method === 'POST' && request.path === '/v1/responses';
  if (!responses && (request.method !== 'POST' || request.path !== '/v1/chat/completions')) {
    return errorResponse(404, `Invalid URL (${request.method} ${request.path})`, 'invalid_request_error', null);
  }
  if (options.expectedApiKey !== undefined && request.headers.authorization !== `Bearer ${options.expectedApiKey}`) {
    return errorResponse(401, 'Incorrect API key provided.', undefined, undefined);
  }
  if (responses) {
    const body = request.body as Record<string, unknown> | null;
    if (!body || typeof body.model !== 'string') return errorResponse(400, 'you must provide a model parameter');
    return null;
  }
  const body = request.body as Record<string, unknown> | null;
  if (!body || typeof body.model !== 'string') return errorResponse(400, 'you must provide a model parameter');
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return errorResponse(400, "Invalid 'messages': empty array.");
  }
  return null;
}

function respond(step: FakeStep | undefined, model: string): WireResponse | { hangMs: number | null } {
  if (!step) return errorResponse(500, 'openai fake: no scripted response left', 'server_error', null);
  switch (step.kind) {
    case 'reply':
      return fromReplyStep(step, model);
    case 'error':
      return fromErrorStep(step);
    case 'context_too_long':
      return errorResponse(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        'invalid_request_error',
        'context_length_exceeded',
      );
    case 'hang':
      return { hangMs: step.ms ?? null };
    case 'raw':
      return { status: step.status, body: step.body, headers: step.headers ?? {} };
  }
}

export async function startOpenAIFake(options: OpenAIFakeOptions = {}): Promise<OpenAIFake> {
  const server = await startFakeServer((request, nextStep) => {
    const invalid = validationError(request, options);
    if (invalid) return invalid;
    const body = request.body as { model: string; stream?: boolean; stream_options?: { include_usage?: boolean } };
    if (request.path === '/v1/responses') {
      const step = nextStep();
      const answer = step?.kind === 'reply' ? responseObject(step, body.model) : respond(step, String(body.model));
      if (body.stream !== true || 'hangMs' in answer) return answer;
      return streamedResponse(answer);
    }
    const answer = respond(nextStep(), String(body.model));
    if (body.stream !== true || 'hangMs' in answer) return answer;
    return streamed(answer, body.stream_options?.include_usage === true);
  });
  return {
    ...server,
    baseURL: `${server.origin}/v1`,
    chatRequests: () => server.requests.filter((r) => r.path === '/v1/chat/completions'),
    responsesRequests: () => server.requests.filter((r) => r.path === '/v1/responses'),
  };
}
