// The workflow bundle of a worker process (workers/worker.ts, workers/dev.ts), built in a worker thread (issue #11:
// memory per process). Bundling with webpack in the process's own isolate, as Worker.create does for a
// `workflowsPath`, leaves about 40 MB of webpack's data reachable for the process's life (measured: the heap after a
// full GC went from 43 to 87 MB). Built in a thread, it goes with the thread's isolate: the process keeps the bundle's
// code (about 3 MB) and nothing else of the build. Same bundle as Worker.create would build: the SDK's
// bundleWorkflowCode with its default interceptor modules and no bundler options (createWorker.ts passes none).
import { createRequire } from 'node:module';
import { Worker as Thread } from 'node:worker_threads';
import { type Logger, type LogLevel, type LogMetadata, Runtime } from '@temporalio/worker';

/** What the thread posts: a line of the bundler's log, or the bundle. */
type ThreadMessage = { log: { level: LogLevel; message: string; meta?: LogMetadata } } | { code: string };

// CommonJS, so that the thread needs no TypeScript loader; it loads the SDK from the path this module resolves.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { bundleWorkflowCode } = require(workerData.sdk);
const forward = (level) => (message, meta) => {
  let clonable;
  try { clonable = meta === undefined ? undefined : structuredClone(meta); } catch { clonable = { meta: String(meta) }; }
  parentPort.postMessage({ log: { level, message: String(message), meta: clonable } });
};
const logger = {
  log: (level, message, meta) => forward(level)(message, meta),
  trace: forward('TRACE'), debug: forward('DEBUG'), info: forward('INFO'), warn: forward('WARN'), error: forward('ERROR'),
};
bundleWorkflowCode({ workflowsPath: workerData.workflowsPath, logger }).then(({ code }) => parentPort.postMessage({ code }));
`;

/** Bundles the workflows at `workflowsPath` in a worker thread; the bundler's log goes to `logger`. */
export function bundleWorkflowsInThread(
  workflowsPath: string,
  logger: Logger = Runtime.instance().logger,
): Promise<{ code: string }> {
  const sdk = createRequire(import.meta.url).resolve('@temporalio/worker');
  return new Promise((resolve, reject) => {
    let code: string | undefined;
    const thread = new Thread(THREAD_SOURCE, { eval: true, workerData: { sdk, workflowsPath } });
    thread.on('message', (message: ThreadMessage) => {
      if ('code' in message) code = message.code;
      else logger.log(message.log.level, message.log.message, message.log.meta);
    });
    // A failed build rejects in the thread, which then ends with that error.
    thread.once('error', reject);
    thread.once('exit', (exitCode) => {
      if (code !== undefined) resolve({ code });
      else reject(new Error(`the workflow bundle's thread ended (exit code ${exitCode}) without a bundle`));
    });
  });
}
