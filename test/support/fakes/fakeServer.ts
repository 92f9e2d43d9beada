// The HTTP core of the fake LLM servers: node:http on 127.0.0.1:0, a queue of scripted steps, and a record of
// every request (method, path, lower-cased headers, parsed JSON body) so tests can assert what went on the wire.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeStep } from './script.js';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
  /** The body exactly as it arrived. */
  raw: string;
}

export interface WireResponse {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
  /** A streamed answer instead of `body`: Server-Sent Events, a `data:` payload each (with its `event:` name). */
  events?: Array<string | { event: string; data: string }>;
  /** Answer only after this long (a slow model). */
  delayMs?: number;
  /** Streamed: wait this long between events. */
  eventGapMs?: number;
  /** Streamed: destroy the connection after this many events. */
  cutAfterEvents?: number;
}

/** What a fake does with one request: answer (a wire response) or hang. `nextStep` takes the next scripted step
 *  (a request the fake rejects by itself, e.g. without a valid key, leaves the queue alone). */
export type Handler = (
  request: RecordedRequest,
  nextStep: () => FakeStep | undefined,
) => WireResponse | { hangMs: number | null };

export interface FakeServer {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly origin: string;
  readonly requests: RecordedRequest[];
  /** Appends steps to the queue; each request takes the next one. */
  enqueue(...steps: FakeStep[]): void;
  /** Steps not yet consumed. */
  pending(): number;
  /** Streamed answers the fake is still writing. */
  streaming(): number;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function lowerCaseHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function parseJson(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function send(res: ServerResponse, response: WireResponse, pause: (ms: number) => Promise<void>) {
  if (response.events) {
    res.writeHead(response.status, { 'content-type': 'text/event-stream', ...(response.headers ?? {}) });
    for (const [i, e] of response.events.entries()) {
      if (i === response.cutAfterEvents) {
        res.destroy();
        return;
      }
      if (i > 0 && response.eventGapMs) await pause(response.eventGapMs);
      if (res.destroyed) return;
      res.write(typeof e === 'string' ? `data: ${e}\n\n` : `event: ${e.event}\ndata: ${e.data}\n\n`);
    }
    res.end();
    return;
  }
  const body = JSON.stringify(response.body);
  res.writeHead(response.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...(response.headers ?? {}),
  });
  res.end(body);
}

export async function startFakeServer(handler: Handler): Promise<FakeServer> {
  const queue: FakeStep[] = [];
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  /** Streamed answers begun and not yet written to their end. */
  let streaming = 0;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const server: Server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: (req.url ?? '/').split('?')[0] ?? '/',
        headers: lowerCaseHeaders(req),
        body: parseJson(text),
        raw: text,
      };
      requests.push(recorded);
      const outcome = handler(recorded, () => queue.shift());
      if ('events' in outcome && outcome.events) streaming += 1;
      if ('hangMs' in outcome) {
        if (outcome.hangMs === null) return;
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.writableEnded && !res.destroyed) res.destroy();
        }, outcome.hangMs);
        timers.add(timer);
        return;
      }
      if (outcome.delayMs) await pause(outcome.delayMs);
      if (!res.destroyed) await send(res, outcome, pause);
      streaming -= outcome.events ? 1 : 0;
    })();
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...steps) => {
      queue.push(...steps);
    },
    pending: () => queue.length,
    streaming: () => streaming,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
