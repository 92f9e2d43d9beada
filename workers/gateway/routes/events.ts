// The tenant's event feed (tenant key; issue #14 §2, SPEC §13.5): `GET /v1/events` as Server-Sent Events, in id
// order, from the event after `Last-Event-ID` (or `after`; none: only what happens from now on), optionally one
// conversation's. The store is the feed: the route reads the tenant's events after the last one sent (PostgreSQL,
// row-level security; one indexed read every poll interval), so a client that reconnects with the last id it saw
// misses nothing and gets nothing twice. Comments keep a quiet connection open. Schemas: contracts/http/events.ts.
import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, TENANT_READ_ERRORS } from '../../../contracts/http/common.js';
import { EventStream, EventsQuery } from '../../../contracts/http/events.js';
import { eventsAfter, type FeedEvent, newestEventId } from '../../../infra/db/events.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import { InvalidRequestError } from '../errors.js';
import { asEventStream, SSE_KEEP_ALIVE } from '../sse.js';

export interface EventRouteDeps extends TenantRouteGate {
  /** How often the feed looks for new events (ms, default 500). */
  eventPollMs?: number;
  /** How often a comment is written while quiet (ms, default 15 s). */
  keepAliveMs?: number;
}

const BATCH = 200;

/** One event as an SSE frame: its id (for Last-Event-ID), its type, its JSON. */
export function eventFrame(event: FeedEvent): string {
  const data = {
    id: event.id,
    type: event.type,
    conversation_id: event.conversationId,
    session_id: event.sessionId,
    compaction_id: event.compactionId,
    created_at: event.createdAt,
    payload: event.payload,
  };
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Where the stream starts: `Last-Event-ID` (a reconnecting EventSource sends it) wins over `after`. */
function startAfter(header: string | string[] | undefined, after: number | undefined): number | null {
  if (typeof header === 'string' && header.trim() !== '') {
    if (!/^\d{1,15}$/.test(header.trim())) throw new InvalidRequestError('Last-Event-ID must be an event id');
    return Number(header.trim());
  }
  return after ?? null;
}

export function eventRoutes(deps: EventRouteDeps): FastifyPluginAsyncTypebox {
  const db = deps.readDb ?? deps.db;
  const pollMs = deps.eventPollMs ?? 500;
  const keepAliveMs = deps.keepAliveMs ?? 15_000;
  return async (app) => {
    requireTenant(app, tenantGate(deps));

    app.get(
      '/v1/events',
      {
        config: { longLived: true },
        schema: {
          tags: ['events'],
          summary:
            'The tenant’s events as Server-Sent Events (compaction started/completed/failed, session:compress, ' +
            'notices), resumable with Last-Event-ID, optionally one conversation’s',
          querystring: EventsQuery,
          response: { 200: EventStream, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request, reply) => {
        const { tenantId } = request;
        const { conversationId } = request.query;
        const query = { limit: BATCH, ...(conversationId !== undefined ? { conversationId } : {}) };
        let last = startAfter(request.headers['last-event-id'], request.query.after);
        // No position: from now on (the newest event so far is the start).
        if (last === null) last = await newestEventId(db, tenantId, conversationId);
        // Read once before answering: an outage is the usual JSON error, not a broken stream.
        const first = await eventsAfter(db, tenantId, last, query);
        const out = new PassThrough();
        out.on('error', () => undefined);
        let open = true;
        const close = () => {
          open = false;
        };
        // The response's close: the client went away (or the server is closing) — maybe already, during the reads.
        reply.raw.on('close', close);
        out.on('close', close);
        if (reply.raw.closed) close();
        /** Writes a frame; resolves once the client has taken what is buffered (a slow reader slows the loop down). */
        const write = async (frame: string) => {
          if (!open || out.destroyed) return;
          if (!out.write(frame)) {
            await new Promise<void>((resolve) => {
              const done = () => {
                out.off('drain', done);
                out.off('close', done);
                resolve();
              };
              out.on('drain', done);
              out.on('close', done);
            });
          }
        };
        void (async () => {
          let batch = first;
          let quietSince = Date.now();
          await write(SSE_KEEP_ALIVE);
          while (open) {
            for (const event of batch) {
              await write(eventFrame(event));
              last = event.id;
            }
            if (batch.length > 0) quietSince = Date.now();
            else if (Date.now() - quietSince >= keepAliveMs) {
              await write(SSE_KEEP_ALIVE);
              quietSince = Date.now();
            }
            if (batch.length < BATCH) await new Promise((resolve) => setTimeout(resolve, pollMs));
            if (!open) break;
            try {
              batch = await eventsAfter(db, tenantId, last, query);
            } catch {
              batch = []; // an outage: the next poll tries again; the client keeps its position
            }
          }
          out.end();
        })();
        return asEventStream(reply).status(200).send(out);
      },
    );
  };
}
