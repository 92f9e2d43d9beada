// `respond: true` with `stream: true` on the messages route (issue #12): the agent turn as Server-Sent Events.
// Nothing is streamed before the request's messages are stored: a refusal before that (bad input, an unknown
// conversation, a reused key, no provider, an outage) is the route's usual JSON error with its status. Then, in order:
// `accepted` (the messages are committed), the reply's text as `delta` events while the model call runs — in the
// gateway, or in the worker for a turn the workflow runs (relayed, infra/db/turnText.ts) — then `reply`, the body
// the request answers without `stream`, and the stream ends. A call that starts over is announced by `discard`: drop
// the text heard so far; the deltas always add up to the stored reply's text (else `discard` and the text whole; it
// comes whole, too, when nothing relayed it). A failure after `accepted` is an `error` event with the status and
// message the request would have answered. Comments keep a quiet connection open.
// A client that goes away loses nothing: the turn runs on, its reply is stored, and a retry with the same idempotency
// keys answers it.
import { PassThrough } from 'node:stream';
import type { ChatTurnReply, TurnObserver } from './chatTurns.js';
import { classify } from './errors.js';
import { SSE_KEEP_ALIVE, sseFrame } from './sse.js';

/** How often a comment is written while no event is (default 15 s). */
export const KEEP_ALIVE_MS = 15_000;

/** The events of the turn `run` runs with the observer given; rejects when it fails before `accepted`. */
export async function streamTurn(
  run: (observer: TurnObserver) => Promise<ChatTurnReply>,
  accepted: { accepted: number; conversationId: string },
  keepAliveMs = KEEP_ALIVE_MS,
): Promise<PassThrough> {
  const out = new PassThrough();
  // A client that went away destroys the stream; the turn runs on, and nothing more is written.
  out.on('error', () => undefined);
  let heard = '';
  let resolveAccepted: () => void = () => undefined;
  const stored = new Promise<void>((resolve) => {
    resolveAccepted = resolve;
  });
  const write = (frame: string) => {
    if (!out.writableEnded && !out.destroyed) out.write(frame);
  };
  const turn = run({
    accepted: () => {
      // Written as the store commits, before any text of the model call that follows.
      write(sseFrame('accepted', accepted));
      resolveAccepted();
    },
    text: (delta) => {
      heard += delta;
      write(sseFrame('delta', { content: delta }));
    },
    discard: () => {
      heard = '';
      write(sseFrame('discard', { reason: 'the model call failed transiently; the turn runs again' }));
    },
  });
  // Before the messages are stored, the turn's failure is the request's (a JSON error with its status); a turn
  // answered before it said so (impossible today) is a stored turn all the same.
  await Promise.race([stored, turn]);
  const keepAlive = setInterval(() => write(SSE_KEEP_ALIVE), keepAliveMs);
  keepAlive.unref();
  void turn
    .then(
      (answer) => {
        // The deltas add up to the stored reply's text: what was heard otherwise (a relay that lost a piece) is
        // discarded and the text sent whole.
        const text = typeof answer.reply.content === 'string' ? answer.reply.content : '';
        if (heard !== text) {
          if (heard !== '') write(sseFrame('discard', { reason: 'the text heard differs from the stored reply' }));
          if (text !== '') write(sseFrame('delta', { content: text }));
        }
        write(sseFrame('reply', { accepted: accepted.accepted, ...answer }));
      },
      (err: unknown) => {
        const { status, message, retryAfter } = classify(err instanceof Error ? err : new Error(String(err)));
        write(sseFrame('error', { status, message, ...(retryAfter !== undefined ? { retryAfter } : {}) }));
      },
    )
    .finally(() => {
      clearInterval(keepAlive);
      if (!out.destroyed) out.end();
    });
  return out;
}
