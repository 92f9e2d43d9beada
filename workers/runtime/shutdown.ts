// Graceful shutdown of an entry point (issue #9 §9): on SIGTERM or SIGINT stop accepting work, let what is in flight
// finish within a bound, close pools and connections, then exit 0. A second signal exits at once.
import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

export interface ShutdownStep {
  name: string;
  run: () => Promise<void>;
}

const DEFAULT_GRACE_MS = 10_000;

/** Seconds a client should wait before retrying a request the shutdown answered. */
const SHUTDOWN_RETRY_AFTER_S = 2;
/** After the 503s of the grace deadline, how long their sockets get to flush before every connection is cut. */
const FLUSH_MS = 1_000;

/**
 * Closes the HTTP server: no new connections, in-flight requests finish. A request still running after `graceMs`
 * (e.g. a `wait: true` post whose worker is down: it waits up to 30 s) is answered `503` with Retry-After instead
 * of having its socket reset: its client learns that what was accepted is stored and that it may retry.
 */
export function closeHttp(app: FastifyInstance, graceMs = DEFAULT_GRACE_MS): ShutdownStep {
  const inFlight = new Set<ServerResponse>();
  app.server.on('request', (_request, response: ServerResponse) => {
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
  });
  const answerTheRest = () => {
    const body = JSON.stringify({
      error: 'Service Unavailable',
      message: `the gateway is shutting down and did not finish this request within ${graceMs / 1000} s; what it stored is kept, retry shortly`,
      statusCode: 503,
    });
    for (const response of inFlight) {
      if (response.headersSent) continue;
      response.writeHead(503, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'retry-after': String(SHUTDOWN_RETRY_AFTER_S),
        connection: 'close',
      });
      response.end(body);
    }
    setTimeout(() => app.server.closeAllConnections(), FLUSH_MS).unref();
  };
  return {
    name: 'HTTP gateway',
    run: async () => {
      const deadline = setTimeout(answerTheRest, graceMs);
      deadline.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(deadline);
      }
    },
  };
}

/** Runs the steps in order once, on the first SIGTERM/SIGINT (or when `shutdown()` is called), then exits. */
export function handleShutdown(steps: ShutdownStep[], log: (line: string) => void = console.log) {
  let stopping: Promise<never> | null = null;
  const shutdown = (code = 0): Promise<never> => {
    stopping ??= (async () => {
      for (const step of steps) {
        try {
          await step.run();
        } catch (err) {
          console.error(`shutdown: ${step.name}: ${(err as Error).message}`);
        }
      }
      log('Stopped.');
      process.exit(code);
    })();
    return stopping;
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(1);
      log(`${signal}: finishing in-flight work, then stopping...`);
      void shutdown(0);
    });
  }
  return shutdown;
}
