// The upstream call of the drop-in Anthropic Messages endpoint (issue #12): a request body in the client's own shape,
// every field kept (system, tools, thinking, metadata, …), sent through the official `@anthropic-ai/sdk` to an
// Anthropic-kind provider, non-streaming or streamed, with the client's `anthropic-beta` header; and the provider's
// token count of a request. Errors as upstreamErrors.ts passes them on.
import type Anthropic from '@anthropic-ai/sdk';
import { mappedStream, upstreamError } from './upstreamErrors.js';

export type AnthropicMessage = Anthropic.Message;
export type AnthropicStreamEvent = Anthropic.RawMessageStreamEvent;
/** A Messages request body as a client sends it. */
export type MessagesBody = Record<string, unknown> & { model: string; messages: unknown[] };

const options = (headers: Record<string, string>, signal?: AbortSignal) => ({
  headers,
  ...(signal ? { signal } : {}),
});

/** One message, not streamed. */
export async function createMessage(
  client: Anthropic,
  provider: string,
  body: MessagesBody,
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<AnthropicMessage> {
  try {
    const params = body as unknown as Anthropic.MessageCreateParamsNonStreaming;
    return await client.messages.create(params, options(headers, signal));
  } catch (err) {
    throw upstreamError(err, provider);
  }
}

/** A streamed message: resolves once the provider has answered; its events then arrive as the provider sends them. */
export async function streamMessage(
  client: Anthropic,
  provider: string,
  body: MessagesBody & { stream: true },
  headers: Record<string, string>,
  signal?: AbortSignal,
): Promise<AsyncIterable<AnthropicStreamEvent>> {
  let stream: AsyncIterable<AnthropicStreamEvent>;
  try {
    const params = body as unknown as Anthropic.MessageCreateParamsStreaming;
    stream = await client.messages.create(params, options(headers, signal));
  } catch (err) {
    throw upstreamError(err, provider);
  }
  return mappedStream(stream, provider);
}

/** The provider's count of a request's input tokens. */
export async function countTokens(
  client: Anthropic,
  provider: string,
  body: MessagesBody,
  headers: Record<string, string>,
): Promise<Anthropic.MessageTokensCount> {
  try {
    return await client.messages.countTokens(body as unknown as Anthropic.MessageCountTokensParams, { headers });
  } catch (err) {
    throw upstreamError(err, provider);
  }
}
