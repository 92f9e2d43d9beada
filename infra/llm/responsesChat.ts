// A chat turn over the OpenAI Responses API (issue #13 §1, SPEC §15.1): the provider kind `openai` with
// `api: responses` (the `openai-codex` route speaks nothing else). Requests are stateless — `store: false`, never a
// `previous_response_id` — so the prepared messages go as `instructions` and input items every time, led by the
// replay items the caller kept (a native checkpoint standing in for the history it condensed). With a
// `compactThreshold` (the caller checked the SPEC §15.1 gate) the request carries `context_management`; when the
// server refuses that field, the same request is sent once more without it and the result says so. The reply's
// `compaction` output items come back apart from its content.
import type OpenAI from 'openai';
import {
  compactionItemsOf,
  contextManagementField,
  isNativeCompactionRejection,
} from '../../engine/nativeCompaction.js';
import type { PreparedContext } from '../../engine/prepareContext.js';
import type { ChatMessage, ToolCall } from '../../engine/types.js';
import type { OpenAIProviderClient } from './clients.js';
import { classifyProviderError, type LlmCallSite } from './errors.js';
import { toResponsesInput } from './responsesItems.js';
import type { OnText } from './streamedCall.js';
import type { ChatResult, ChatTool, ChatUsage, FinishReason } from './types.js';

type Item = Record<string, unknown>;

export interface ResponsesTurnInput {
  tools?: readonly ChatTool[];
  maxTokens?: number;
  signal?: AbortSignal;
  onText?: OnText;
  /** Input items sent first, before the prepared messages (a native checkpoint's `compaction` items). */
  leadingItems?: readonly Item[];
  /** Send `context_management` with this `compact_threshold` (SPEC §15.1 threshold); absent: the field is not sent. */
  compactThreshold?: number;
}

/** The reply of a Responses turn: a chat result with the `compaction` items it returned and the rejection flag. */
export type ResponsesTurnResult = ChatResult & Required<Pick<ChatResult, 'compactionItems' | 'nativeRejected'>>;

/** A function tool in the Responses shape (flat: name, description, parameters). */
function responsesTool(tool: ChatTool): Item {
  const fn = tool.function;
  return {
    type: 'function',
    name: fn.name,
    ...(fn.description !== undefined ? { description: fn.description } : {}),
    parameters: fn.parameters ?? { type: 'object', properties: {} },
    strict: false,
  };
}

function responsesUsage(usage: OpenAI.Responses.ResponseUsage | null | undefined): ChatUsage {
  const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const details = (usage?.input_tokens_details ?? {}) as unknown as Record<string, unknown>;
  const prompt = num(usage?.input_tokens);
  const completion = num(usage?.output_tokens);
  const cacheRead = num(details.cached_tokens);
  const cacheWrite = num(details.cache_write_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof usage?.total_tokens === 'number' ? usage.total_tokens : prompt + completion,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
    uncached_input_tokens: Math.max(0, prompt - cacheRead - cacheWrite),
  };
}

/** The reply as one assistant message: its text parts joined, its function calls as tool calls. */
function replyOf(output: readonly Item[]): { message: ChatMessage; refusal: string | null } {
  let text = '';
  let refusal: string | null = null;
  const calls: ToolCall[] = [];
  for (const item of output) {
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content as Item[]) {
        if (part.type === 'output_text' && typeof part.text === 'string') text += part.text;
        if (part.type === 'refusal' && typeof part.refusal === 'string') refusal = (refusal ?? '') + part.refusal;
      }
    } else if (item.type === 'function_call') {
      calls.push({
        id: String(item.call_id ?? item.id ?? ''),
        type: 'function',
        function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '') },
      });
    }
  }
  const message: ChatMessage =
    calls.length === 0
      ? { role: 'assistant', content: text }
      : { role: 'assistant', content: text || null, tool_calls: calls };
  return { message, refusal };
}

function finishReasonOf(
  response: OpenAI.Responses.Response,
  hasCalls: boolean,
): { finish: FinishReason; raw: string | null } {
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason ?? null;
    return { finish: reason === 'content_filter' ? 'content_filter' : 'length', raw: reason };
  }
  return { finish: hasCalls ? 'tool_calls' : 'stop', raw: response.status ?? null };
}

/**
 * The SPEC §15.1 rejection test on an SDK error or a drop-in's UpstreamHttpError (its status, and the error body's
 * param / code / message).
 */
export function refusesContextManagement(err: unknown): boolean {
  const e = err as {
    status?: unknown;
    param?: unknown;
    code?: unknown;
    message?: unknown;
    error?: unknown;
    body?: unknown;
  };
  if (typeof e?.status !== 'number') return false;
  const inner = e.error ?? (e.body as { error?: unknown } | null | undefined)?.error;
  const body = (typeof inner === 'object' && inner !== null ? inner : {}) as Record<string, unknown>;
  const str = (value: unknown) => (typeof value === 'string' ? value : null);
  return isNativeCompactionRejection({
    status: e.status,
    param: str(e.param) ?? str(body.param),
    code: str(e.code) ?? str(body.code),
    message: str(body.message) ?? str(e.message),
  });
}

async function send(
  client: OpenAI,
  body: OpenAI.Responses.ResponseCreateParamsNonStreaming,
  input: ResponsesTurnInput,
): Promise<OpenAI.Responses.Response> {
  const options = input.signal ? { signal: input.signal } : {};
  if (!input.onText) return client.responses.create(body, options);
  const onText = input.onText;
  const stream = client.responses.stream({ ...body, stream: true }, options);
  stream.on('response.output_text.delta', (event) => onText(event.delta));
  return stream.finalResponse();
}

/** One turn over the Responses API; rejects with an LlmFailure (errors.ts). */
export async function responsesChat(
  client: OpenAIProviderClient,
  input: ResponsesTurnInput,
  model: string,
  prepared: PreparedContext,
  site: LlmCallSite,
): Promise<ResponsesTurnResult> {
  const { instructions, input: items } = toResponsesInput(prepared.messages);
  const body: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
    model,
    store: false,
    ...(instructions !== undefined ? { instructions } : {}),
    input: [...(input.leadingItems ?? []), ...items] as unknown as OpenAI.Responses.ResponseInput,
    ...(input.tools && input.tools.length > 0
      ? { tools: input.tools.map(responsesTool) as unknown as OpenAI.Responses.Tool[] }
      : {}),
    ...(input.maxTokens !== undefined ? { max_output_tokens: input.maxTokens } : {}),
  };
  const native = input.compactThreshold === undefined ? null : contextManagementField(input.compactThreshold);
  let response: OpenAI.Responses.Response;
  let nativeRejected = false;
  try {
    try {
      response = await send(client.openai, native ? { ...body, context_management: native } : body, input);
    } catch (err) {
      if (!native || !refusesContextManagement(err)) throw err;
      // SPEC §15.1 rejection: the same request once more, without the field; the caller disables it for the session.
      nativeRejected = true;
      response = await send(client.openai, body, input);
    }
  } catch (err) {
    throw classifyProviderError(err, site);
  }
  const output = (response.output ?? []) as unknown as Item[];
  const { message, refusal } = replyOf(output);
  const { finish, raw } = finishReasonOf(response, (message.tool_calls?.length ?? 0) > 0);
  return {
    message,
    finishReason: finish,
    rawFinishReason: raw,
    refusal,
    usage: responsesUsage(response.usage),
    model,
    cachingEnabled: prepared.caching.enabled,
    compactionItems: compactionItemsOf(output),
    nativeRejected,
  };
}
