// Graceful shutdown of an entry point (issue #9 §9): on SIGTERM or SIGINT stop accepting work, let what is in flight
// finish within a bound, close pools and connections, then exit 0. A second signal exits at once.
import type { FastifyInstance } from 'fastify';

export interface ShutdownStep {
  name: string;
  run: () => Promise<void>;
}

const DEFAULT_GRACE_MS = 10_000;

/** Closes the HTTP server: no new connections, in-flight requests finish; after `graceMs` the rest is cut. */
export function closeHttp(app: FastifyInstance, graceMs = DEFAULT_GRACE_MS): ShutdownStep {
  return {
    name: 'HTTP gateway',
    run: async () => {
      const cut = setTimeout(() => app.server.closeAllConnections(), graceMs);
      cut.unref();
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
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
