// The upstream call of the drop-in OpenAI Chat Completions endpoint (issue #12): a request body in the client's own
// shape, every field kept (sampling, tools, response_format, …), sent through the official `openai` SDK to an
// OpenAI-kind provider, non-streaming or streamed. Errors keep what the client needs to act on them: the provider's
// status, its `retry-after` and its error object; a provider that cannot be reached is an outage (503).
import type OpenAI from 'openai';
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

export type ChatCompletion = OpenAI.Chat.ChatCompletion;
export type ChatCompletionChunk = OpenAI.Chat.ChatCompletionChunk;
/** A Chat Completions request body as a client sends it. */
export type CompletionBody = Record<string, unknown> & { model: string; messages: unknown[] };

/** The provider answered with an error: passed on to the client as it came. */
export class UpstreamHttpError extends Error {
  override name = 'UpstreamHttpError';
  constructor(
    readonly status: number,
    /** The provider's `error` object (OpenAI's `{message, type, param, code}`), or null when it sent none. */
    readonly error: Record<string, unknown> | null,
    readonly retryAfter: string | null,
  ) {
    super(typeof error?.message === 'string' ? error.message : `the provider answered ${status}`);
  }
}

/** The provider could not be reached or did not answer in time. */
export class UpstreamUnavailableError extends Error {
  override name = 'UpstreamUnavailableError';
}

function upstreamError(err: unknown, provider: string): Error {
  if (err instanceof APIUserAbortError) return err;
  if (err instanceof APIConnectionError) {
    return new UpstreamUnavailableError(`the provider '${provider}' could not be reached (${err.message})`);
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    const error = err.error && typeof err.error === 'object' ? (err.error as Record<string, unknown>) : null;
    return new UpstreamHttpError(err.status, error, err.headers?.get('retry-after') ?? null);
  }
  return err instanceof Error ? err : new Error(String(err));
}

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
  return {
    async *[Symbol.asyncIterator]() {
      try {
        yield* stream;
      } catch (err) {
        throw upstreamError(err, provider);
      }
    },
  };
}
