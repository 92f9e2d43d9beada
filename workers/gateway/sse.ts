// Server-Sent Events as the gateway writes them (the drop-in dialects and the messages route's `stream: true`):
// one frame per event, a JSON payload each, and the response headers of an event stream.
import type { FastifyReply } from 'fastify';

/** An event named `event` with `data` as its JSON payload. */
export const sseFrame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** An unnamed event whose payload is `payload` as given (OpenAI Chat Completions' chunks and `[DONE]`). */
export const sseData = (payload: string): string => `data: ${payload}\n\n`;

/** A comment: keeps an idle connection open through proxies, ignored by every SSE parser. */
export const SSE_KEEP_ALIVE = ': keep-alive\n\n';

/** The headers of an event stream, set on `reply`. */
export function asEventStream(reply: FastifyReply): FastifyReply {
  return reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache');
}
