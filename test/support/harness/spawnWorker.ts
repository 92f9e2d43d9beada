// A conversation worker in a child process (test/support/harness/workerProcess.ts) that a test can SIGKILL: started on a
// task queue with kill hooks (PAUSE_AFTER / PAUSE_IN / PAUSE_SKIP) and a prebuilt workflow bundle, with a wait for
// the lines it prints (`READY`, `PAUSED <activity>`). Used by the crash tests, the several-processes test
// (test/integration/ops/severalProcesses.test.ts) and the recovery benchmark.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const WORKER_SCRIPT = fileURLToPath(new URL('./workerProcess.ts', import.meta.url));

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Resolves when the process printed this line; rejects when it exits first or the time is up. */
  waitFor(line: string, timeoutMs?: number): Promise<void>;
  /** SIGKILL, and wait until the process is gone; resolves to how it ended. */
  kill(): Promise<NodeJS.Signals | number | null>;
}

export interface WorkerProcessOptions {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  /** A prebuilt workflow bundle (code file), so the process does not bundle. */
  bundlePath?: string;
  /** Kill hooks and further environment (PAUSE_AFTER, PAUSE_IN, PAUSE_SKIP, CONFIG_YAML, keys). */
  env?: Record<string, string>;
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export function startWorkerProcess(options: WorkerProcessOptions): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      TEMPORAL_ADDRESS: options.temporalAddress,
      TEMPORAL_NAMESPACE: options.temporalNamespace,
      TASK_QUEUE: options.taskQueue,
      HEARTBEAT_INTERVAL_MS: '500',
      ...(options.bundlePath ? { WORKFLOW_BUNDLE_PATH: options.bundlePath } : {}),
      ...options.env,
    },
  });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let stderr = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  child.once('exit', () => {
    for (const w of waiters.splice(0)) w();
  });
  return {
    child,
    waitFor: (line, timeoutMs = 60_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`worker process: no '${line}' within ${timeoutMs} ms; stderr:\n${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          if (lines.includes(line)) {
            clearTimeout(timer);
            resolve();
          } else if (child.exitCode !== null || child.signalCode !== null) {
            clearTimeout(timer);
            reject(
              new Error(`worker process exited (${child.exitCode ?? child.signalCode}) before '${line}':\n${stderr}`),
            );
          } else {
            waiters.push(check);
          }
        };
        check();
      }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited(child);
      return child.signalCode ?? child.exitCode;
    },
  };
}
