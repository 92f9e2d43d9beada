// The upstream call of the drop-in OpenAI Chat Completions endpoint (issue #12): a request body in the client's own
// shape, every field kept (sampling, tools, response_format, …), sent through the official `openai` SDK to an
// OpenAI-kind provider, non-streaming or streamed. Errors keep what the client needs to act on them: the provider's
// status, its `retry-after` and its error object; a provider that cannot be reached is an outage (503).
import type OpenAI from 'openai';
import { mappedStream, upstreamError } from './upstreamErrors.js';

export { UpstreamHttpError, UpstreamUnavailableError } from './upstreamErrors.js';

export type ChatCompletion = OpenAI.Chat.ChatCompletion;
export type ChatCompletionChunk = OpenAI.Chat.ChatCompletionChunk;
/** A Chat Completions request body as a client sends it. */
export type CompletionBody = Record<string, unknown> & { model: string; messages: unknown[] };

/** One completion, not streamed. */
export async function createCompletion(
  client: OpenAI,
  provider: string,
  body: CompletionBody,
  signal?: AbortSignal,
): Promise<ChatCompletion> {
  try {
    // As the client sent it (`stream` absent or false).
    const params = body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    return await client.chat.completions.create(params, signal ? { signal } : {});
  } catch (err) {
    throw upstreamError(err, provider);
  }
}

/**
 * A streamed completion: resolves once the provider has answered (an error before the first chunk rejects, as
 * above); the chunks then arrive as the provider sends them. An error in the middle of the stream is thrown by the
 * iteration, mapped the same way.
 */
export async function streamCompletion(
  client: OpenAI,
  provider: string,
  body: CompletionBody & { stream: true },
  signal?: AbortSignal,
): Promise<AsyncIterable<ChatCompletionChunk>> {
  let stream: AsyncIterable<ChatCompletionChunk>;
  try {
    const params = body as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming;
    stream = await client.chat.completions.create(params, signal ? { signal } : {});
  } catch (err) {
    throw upstreamError(err, provider);
  }
  return mappedStream(stream, provider);
}
