// What a drop-in endpoint (issue #12) passes on when the provider does not answer with a result: its HTTP error as
// it came (status, `retry-after`, the error body in the provider's own dialect), or that it could not be reached
// (an outage: 503). Both SDKs' errors map here.
import {
  APIUserAbortError as AnthropicAbortError,
  APIError as AnthropicAPIError,
  APIConnectionError as AnthropicConnectionError,
} from '@anthropic-ai/sdk';
import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

/** The provider answered with an error: passed on to the client as it came. */
export class UpstreamHttpError extends Error {
  override name = 'UpstreamHttpError';
  constructor(
    readonly status: number,
    /** The error body in the provider's dialect (OpenAI `{error: {…}}`, Anthropic `{type: 'error', error: {…}}`). */
    readonly body: Record<string, unknown> | null,
    readonly retryAfter: string | null,
    message: string,
  ) {
    super(message);
  }
}

/** The provider could not be reached or did not answer in time. */
export class UpstreamUnavailableError extends Error {
  override name = 'UpstreamUnavailableError';
}

const asObject = (value: unknown) => (value && typeof value === 'object' ? (value as Record<string, unknown>) : null);

/** An SDK error → what the client is answered; other errors unchanged. */
export function upstreamError(err: unknown, provider: string): Error {
  if (err instanceof APIUserAbortError || err instanceof AnthropicAbortError) return err;
  if (err instanceof APIConnectionError || err instanceof AnthropicConnectionError) {
    return new UpstreamUnavailableError(`the provider '${provider}' could not be reached (${err.message})`);
  }
  if (err instanceof APIError && typeof err.status === 'number') {
    // OpenAI's SDK keeps the body's `error` object.
    const inner = asObject(err.error);
    return new UpstreamHttpError(
      err.status,
      inner ? { error: inner } : null,
      err.headers?.get('retry-after') ?? null,
      err.message,
    );
  }
  if (err instanceof AnthropicAPIError && typeof err.status === 'number') {
    // Anthropic's SDK keeps the whole body.
    return new UpstreamHttpError(err.status, asObject(err.error), err.headers?.get('retry-after') ?? null, err.message);
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** `stream`, with an error in the middle of it mapped as `upstreamError` maps it. */
export function mappedStream<T>(stream: AsyncIterable<T>, provider: string): AsyncIterable<T> {
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
