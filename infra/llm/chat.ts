// One chat call to either provider kind (DESIGN.md §5) — an OpenAI-kind provider over Chat Completions or the
// Responses API (responsesChat.ts) — non-streaming or streamed (streamedCall.ts). Before
// sending: a `-900k` alias is reduced to its base model (SPEC §4.3), cache markers are placed when SPEC §12.1 says
// caching is on (Claude via the native Anthropic API or OpenRouter, a truthy TTL) and removed otherwise, and only
// the wire fields of each message are sent (SPEC §1.2: extra runtime properties stay home). Every SDK error leaves
// as an LlmFailure.
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { CacheTtl } from '../../engine/config.js';
import { ModelNotAvailableError, resolveModelAlias } from '../../engine/modelRegistry.js';
import { type PreparedContext, withCacheMarkers } from '../../engine/prepareContext.js';
import type { ChatMessage, ToolCall } from '../../engine/types.js';
import { anthropicMessagesBody } from './anthropicBody.js';
import { COMPACT_BETA, type LeadingCompaction, toAnthropicRequestWithBlock } from './anthropicCompaction.js';
import { toAnthropicRequest, toAnthropicTools } from './anthropicMessages.js';
import type { AnthropicProviderClient, OpenAIProviderClient, ProviderClient } from './clients.js';
import { classifyProviderError, type LlmCallSite, modelNotAvailableFailure, noChoiceFailure } from './errors.js';
import { fromAnthropicResponse } from './fromAnthropic.js';
import { JSON_BODY, jsonBytes } from './jsonBody.js';
import { chatCompletionsBody, toOpenAIMessage } from './openaiMessages.js';
import { responsesChat } from './responsesChat.js';
import { anthropicBetaCall, anthropicStreamed, type OnText, openAIStreamed, STREAMED } from './streamedCall.js';
import type { ChatResult, ChatTool, ChatUsage, FinishReason } from './types.js';

/** Anthropic requires `max_tokens`; used when the caller gives none. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 8_192;

interface ChatCallInput {
  provider: ProviderClient;
  /** The model as configured; a `-900k` alias is sent as its base model. */
  model: string;
  tools?: readonly ChatTool[];
  /** Output limit. OpenAI kind: omitted when absent. Anthropic kind: DEFAULT_ANTHROPIC_MAX_TOKENS when absent. */
  maxTokens?: number;
  signal?: AbortSignal;
  /** Streams the call: each piece of the reply's text as it arrives (streamedCall.ts); the result is the same. */
  onText?: OnText;
  /**
   * The messages are the same objects from one call to the next (the gateway's transcript cache): their JSON is
   * kept with them (jsonBody.ts), so a call serialises only the new ones. Without it the body is serialised whole,
   * which costs less for messages seen once (keeping each one's JSON costs about 60 % more than not).
   */
  keepJson?: boolean;
  /** Responses API: input items sent before the messages (a native checkpoint's replay items, SPEC §15.1). */
  leadingItems?: readonly Record<string, unknown>[];
  /** Responses API: send `context_management` with this threshold (the caller checked the SPEC §15.1 gate). */
  compactThreshold?: number;
  /**
   * Anthropic: a compaction block this route issued, sent first in `messages` before the prepared messages (which no
   * longer hold the rows it summarised) over the compaction beta (anthropicCompaction.ts, SPEC §19).
   */
  leadingCompaction?: LeadingCompaction;
}

/** Either a context prepared by the caller (engine/prepareContext.ts), or messages to cache-mark for this call. */
export type ChatCompletionInput = ChatCallInput &
  (
    | { context: PreparedContext }
    | {
        messages: readonly ChatMessage[];
        /** `prompt_caching.cache_ttl` (SPEC §2.3); null disables caching. */
        cache: { ttl: CacheTtl } | null;
      }
  );

/** The `cache` option from `prompt_caching.cache_ttl` (SPEC §2.3: a falsy value disables caching). */
export function cacheOption(promptCaching: { cacheTtl: CacheTtl | null }): { ttl: CacheTtl } | null {
  return promptCaching.cacheTtl ? { ttl: promptCaching.cacheTtl } : null;
}

function sendAsModel(model: string, site: LlmCallSite): string {
  try {
    return resolveModelAlias(model).sendAs;
  } catch (err) {
    if (err instanceof ModelNotAvailableError) throw modelNotAvailableFailure(site, err.message);
    throw err;
  }
}

/** The messages to send: prepared by the caller, or cache-marked here for the model that is sent (SPEC §12). */
function preparedOf(input: ChatCompletionInput, model: string): PreparedContext {
  if ('context' in input) return input.context;
  return withCacheMarkers(input.messages, {
    model,
    cachingRoute: input.provider.cachingRoute,
    cacheTtl: input.cache?.ttl ?? null,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI chat completions (also OpenRouter, vLLM, Ollama).

function openAIUsage(usage: OpenAI.CompletionUsage | undefined): ChatUsage {
  const raw = (usage ?? {}) as Partial<OpenAI.CompletionUsage> & Record<string, unknown>;
  const details = (raw.prompt_tokens_details ?? {}) as Record<string, unknown>;
  const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const prompt = num(raw.prompt_tokens);
  const completion = num(raw.completion_tokens);
  const cacheRead = num(details.cached_tokens);
  // OpenRouter and some gateways report cache writes; the field name varies.
  const cacheWrite = num(details.cache_write_tokens ?? raw.cache_write_tokens ?? raw.cache_creation_input_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: typeof raw.total_tokens === 'number' ? raw.total_tokens : prompt + completion,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
    uncached_input_tokens: Math.max(0, prompt - cacheRead - cacheWrite),
  };
}

function fromOpenAIMessage(message: OpenAI.Chat.ChatCompletionMessage): ChatMessage {
  const calls: ToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type !== 'function') continue;
    calls.push({
      id: call.id,
      type: 'function',
      function: { name: call.function.name, arguments: call.function.arguments },
    });
  }
  if (calls.length === 0) return { role: 'assistant', content: message.content ?? '' };
  return { role: 'assistant', content: message.content ?? null, tool_calls: calls };
}

/** api.openai.com wants `max_completion_tokens`; OpenAI-compatible servers understand `max_tokens`. */
function maxTokensParam(client: OpenAIProviderClient, maxTokens: number | undefined): Record<string, number> {
  if (maxTokens === undefined) return {};
  return client.id === 'openai' ? { max_completion_tokens: maxTokens } : { max_tokens: maxTokens };
}

async function openAIChat(
  client: OpenAIProviderClient,
  input: ChatCompletionInput,
  model: string,
  prepared: PreparedContext,
  site: LlmCallSite,
): Promise<ChatResult> {
  const rest = {
    ...(input.tools && input.tools.length > 0 ? { tools: input.tools as OpenAI.Chat.ChatCompletionTool[] } : {}),
    ...maxTokensParam(client, input.maxTokens),
  };
  // Each message's JSON kept with it when `keepJson`; sent as the SDK's own body would be: same path, client,
  // headers, retries and errors.
  const kept = input.keepJson
    ? (fields: Record<string, unknown>) => chatCompletionsBody(model, prepared.messages, { ...rest, ...fields })
    : null;
  let completion: OpenAI.Chat.ChatCompletion;
  try {
    if (input.onText) {
      const params = { model, messages: prepared.messages.map(toOpenAIMessage), ...rest };
      completion = await openAIStreamed(client.openai, params, input.onText, input.signal, kept?.(STREAMED));
    } else {
      completion = await client.openai.post<OpenAI.Chat.ChatCompletion>('/chat/completions', {
        body: kept ? kept({}) : jsonBytes({ model, messages: prepared.messages.map(toOpenAIMessage), ...rest }),
        headers: JSON_BODY,
        ...(input.signal ? { signal: input.signal } : {}),
      });
    }
  } catch (err) {
    throw classifyProviderError(err, site);
  }
  const choice = completion.choices?.[0];
  if (!choice) throw noChoiceFailure(site);
  return {
    message: fromOpenAIMessage(choice.message),
    finishReason: choice.finish_reason ?? 'stop',
    rawFinishReason: choice.finish_reason ?? null,
    refusal: choice.message.refusal ?? null,
    usage: openAIUsage(completion.usage),
    model,
    cachingEnabled: prepared.caching.enabled,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Anthropic Messages.

const ANTHROPIC_FINISH_REASONS: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'refusal',
};

function anthropicFinishReason(stopReason: string | null): FinishReason {
  if (stopReason === null) return 'stop';
  return Object.hasOwn(ANTHROPIC_FINISH_REASONS, stopReason)
    ? (ANTHROPIC_FINISH_REASONS[stopReason] ?? stopReason)
    : stopReason;
}

/** SPEC §7.3 reads `prompt_tokens`: for Anthropic that is input + cache writes + cache reads. */
function anthropicUsage(usage: Anthropic.Usage | undefined): ChatUsage {
  const num = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const uncached = num(usage?.input_tokens);
  const cacheWrite = num(usage?.cache_creation_input_tokens);
  const cacheRead = num(usage?.cache_read_input_tokens);
  const completion = num(usage?.output_tokens);
  const prompt = uncached + cacheWrite + cacheRead;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
    uncached_input_tokens: uncached,
  };
}

async function anthropicChat(
  client: AnthropicProviderClient,
  input: ChatCompletionInput,
  model: string,
  prepared: PreparedContext,
  site: LlmCallSite,
): Promise<ChatResult> {
  const leading = input.leadingCompaction;
  const { system, messages } = leading
    ? toAnthropicRequestWithBlock(prepared.messages, leading)
    : toAnthropicRequest(prepared.messages);
  const head = { model, max_tokens: input.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS };
  const tail = {
    ...(system !== undefined ? { system } : {}),
    ...(input.tools && input.tools.length > 0 ? { tools: toAnthropicTools(input.tools) } : {}),
  };
  const body: Anthropic.MessageCreateParamsNonStreaming = { ...head, messages, ...tail };
  const encoded = (fields: Record<string, unknown>) =>
    input.keepJson
      ? anthropicMessagesBody(head, prepared.messages, { ...tail, ...fields })
      : jsonBytes({ ...body, ...fields });
  let response: Anthropic.Message;
  try {
    if (leading) {
      // A request that carries a compaction block goes over the beta it belongs to.
      response = (await anthropicBetaCall(
        client.anthropic,
        { ...body, betas: [COMPACT_BETA] },
        input,
      )) as Anthropic.Message;
    } else {
      // The SDK gets `body` for what it derives from it (headers, its timeout) and sends its bytes (put together by
      // anthropicBody.ts when `keepJson`) in its place: its request options come after the body it builds; were that
      // ever not so, it would send `body` itself, the same request.
      response = input.onText
        ? await anthropicStreamed(client.anthropic, body, input.onText, input.signal, encoded({ stream: true }))
        : await client.anthropic.messages.create(body, {
            ...(input.signal ? { signal: input.signal } : {}),
            body: encoded({}),
            headers: JSON_BODY,
          });
    }
  } catch (err) {
    throw classifyProviderError(err, site);
  }
  const stopReason = response.stop_reason ?? null;
  return {
    message: fromAnthropicResponse(response),
    finishReason: anthropicFinishReason(stopReason),
    rawFinishReason: stopReason,
    refusal: null,
    usage: anthropicUsage(response.usage),
    model,
    cachingEnabled: prepared.caching.enabled,
  };
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * One non-streaming chat call. Resolves with the reply, whatever its finish reason (a refusal or truncation is for
 * the caller to judge); rejects with an LlmFailure from `errors.ts`.
 */
export async function chatCompletion(input: ChatCompletionInput): Promise<ChatResult> {
  const site: LlmCallSite = { provider: input.provider.id, model: input.model };
  const model = sendAsModel(input.model, site);
  const prepared = preparedOf(input, model);
  if (input.provider.kind === 'anthropic') return anthropicChat(input.provider, input, model, prepared, site);
  if (input.provider.api === 'responses') return responsesChat(input.provider, input, model, prepared, site);
  return openAIChat(input.provider, input, model, prepared, site);
}
