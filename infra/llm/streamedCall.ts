// Streamed model calls that end as the non-streaming ones do (issue #12: `stream: true` on the messages route). The
// SDKs' own stream helpers hand each text delta to `onText` as it arrives and put the whole answer together, so the
// reply, finish reason and usage are read from it exactly as from a non-streaming call (chat.ts). OpenAI sends its
// usage in a streamed answer only when asked (`stream_options.include_usage`); the store needs it (SPEC §7).
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { JSON_BODY } from './jsonBody.js';

/** Receives each piece of the reply's text, in order. */
export type OnText = (delta: string) => void;

const requestOptions = (signal: AbortSignal | undefined) => (signal ? { signal } : {});

/** The fields that make a Chat Completions request streamed, with the usage the store needs. */
export const STREAMED = { stream: true, stream_options: { include_usage: true } } as const;

/**
 * The completion of `body`, streamed. `encoded`: the request's bytes as already put together (openaiMessages.ts),
 * `body` with STREAMED; the SDK's stream helper sends them in place of serialising `body` again (its request options
 * come after the body it builds; were that ever not so, it would send `body` itself, the same request).
 */
export async function openAIStreamed(
  client: OpenAI,
  body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming,
  onText: OnText,
  signal?: AbortSignal,
  encoded?: Buffer,
): Promise<OpenAI.Chat.ChatCompletion> {
  const options = typeof body.stream_options === 'object' && body.stream_options !== null ? body.stream_options : {};
  const stream = client.chat.completions.stream(
    { ...body, ...STREAMED, stream_options: { ...options, ...STREAMED.stream_options } },
    { ...requestOptions(signal), ...(encoded ? { body: encoded, headers: JSON_BODY } : {}) },
  );
  stream.on('content', (delta) => onText(delta));
  return stream.finalChatCompletion();
}

/** The message of `body`, streamed; `encoded`: its bytes with `stream: true`, sent in its place (as openAIStreamed). */
export async function anthropicStreamed(
  client: Anthropic,
  body: Anthropic.MessageCreateParamsNonStreaming,
  onText: OnText,
  signal?: AbortSignal,
  encoded?: Buffer,
): Promise<Anthropic.Message> {
  const stream = client.messages.stream(body, {
    ...requestOptions(signal),
    ...(encoded ? { body: encoded, headers: JSON_BODY } : {}),
  });
  stream.on('text', (delta) => onText(delta));
  return stream.finalMessage();
}

/** A beta Messages call (the compaction beta's requests), streamed when `onText` is given. */
export async function anthropicBetaCall(
  client: Anthropic,
  body: Anthropic.Beta.MessageCreateParamsNonStreaming,
  options: { onText?: OnText; signal?: AbortSignal | undefined },
): Promise<Anthropic.Beta.BetaMessage> {
  if (!options.onText) return client.beta.messages.create(body, requestOptions(options.signal));
  const stream = client.beta.messages.stream(body, requestOptions(options.signal));
  const onText = options.onText;
  stream.on('text', (delta) => onText(delta));
  return stream.finalMessage();
}
