// The upstream call of the drop-in OpenAI Responses endpoint (issue #12): a request body in the client's own shape,
// every field kept (instructions, tools, reasoning, include, store: false, …), sent through the official `openai`
// SDK's `responses.create` to an OpenAI-kind provider, non-streaming or streamed. Errors as upstreamErrors.ts
// passes them on.
import type OpenAI from 'openai';
import { mappedStream, upstreamError } from './upstreamErrors.js';

export type ResponseObject = OpenAI.Responses.Response;
export type ResponseStreamEvent = OpenAI.Responses.ResponseStreamEvent;
/** A Responses request body as a client sends it. */
export type ResponsesBody = Record<string, unknown> & { model: string };

/** One response, not streamed. */
export async function createResponse(client: OpenAI, provider: string, body: ResponsesBody): Promise<ResponseObject> {
  try {
    return await client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  } catch (err) {
    throw upstreamError(err, provider);
  }
}

/** A streamed response: resolves once the provider has answered; its events then arrive as the provider sends them. */
export async function streamResponse(
  client: OpenAI,
  provider: string,
  body: ResponsesBody & { stream: true },
): Promise<AsyncIterable<ResponseStreamEvent>> {
  let stream: AsyncIterable<ResponseStreamEvent>;
  try {
    stream = await client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
  } catch (err) {
    throw upstreamError(err, provider);
  }
  return mappedStream(stream, provider);
}
