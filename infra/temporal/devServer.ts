// Starts `temporal server start-dev` as a child process on free or configured ports, waits until the frontend
// answers (and the search attributes are visible), and stops it cleanly. Used by the test harness and `npm start`.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { resolveTemporalCli } from './cli.js';

export interface SearchAttributeSpec {
  name: string;
  type: 'Keyword' | 'Int' | 'Text' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';
}

export interface DevServerOptions {
  cliPath?: string;
  /** gRPC port; 0 or absent picks a free port. */
  grpcPort?: number;
  /** Web UI port; 0 or absent picks a free port; `false` runs headless. */
  uiPort?: number | false;
  /** SQLite file for persistence across restarts; absent keeps state in memory. */
  dbFile?: string;
  /** SQLite pragmas of the file store (`--sqlite-pragma`), e.g. `{ journal_mode: 'wal' }`; only with `dbFile`. */
  sqlitePragmas?: Record<string, string>;
  namespace?: string;
  searchAttributes?: readonly SearchAttributeSpec[];
  /** Extra dynamic config, e.g. `{ 'limit.historyCount.suggestContinueAsNew': 200 }`. */
  dynamicConfig?: Record<string, unknown>;
  /** How long to wait for the server to answer (2 cores: allow up to 60 s). */
  startTimeoutMs?: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  onOutput?: (line: string) => void;
}

export interface DevServer {
  address: string;
  namespace: string;
  uiUrl: string | null;
  pid: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Free ports are picked by binding and releasing them: another process may take one before the server binds it. */
const PORT_ATTEMPTS = 4;

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      const portsChosenHere = !options.grpcPort && (options.uiPort === false || !options.uiPort);
      const raced = err instanceof Error && /address already in use/.test(err.message);
      if (!portsChosenHere || !raced || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}

async function startOnce(options: DevServerOptions): Promise<DevServer> {
  const cli = options.cliPath ?? (await resolveTemporalCli());
  const namespace = options.namespace ?? 'default';
  const grpcPort = options.grpcPort || (await freePort());
  const uiPort = options.uiPort === false ? false : options.uiPort || (await freePort());
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(grpcPort)];
  args.push('--log-level', options.logLevel ?? 'warn');
  if (uiPort === false) args.push('--headless');
  else args.push('--ui-port', String(uiPort));
  if (namespace !== 'default') args.push('--namespace', namespace);
  if (options.dbFile) {
    mkdirSync(dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
    for (const [pragma, value] of Object.entries(options.sqlitePragmas ?? {})) {
      args.push('--sqlite-pragma', `${pragma}=${value}`);
    }
  }
  for (const sa of options.searchAttributes ?? []) args.push('--search-attribute', `${sa.name}=${sa.type}`);
  // The dev server hands tasks to workers at most ~20 times a second by default (~50 ms per workflow step after a
  // short burst); a compaction has a dozen steps, so raise it (measured: 647 ms → 156 ms p50 per compaction).
  // Eager activities: the answer to a workflow task that schedules an activity carries the activity task itself
  // (the SDK asks for it by default), so an activity starts without a trip through matching.
  const dynamicConfig = {
    'history.transferProcessorMaxPollRPS': 1000,
    'system.enableActivityEagerExecution': true,
    ...options.dynamicConfig,
  };
  for (const [key, value] of Object.entries(dynamicConfig)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      output.push(line);
      if (output.length > 200) output.shift();
      options.onOutput?.(line);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });

  const address = `127.0.0.1:${grpcPort}`;
  const server: DevServer = {
    address,
    namespace,
    uiUrl: uiPort === false ? null : `http://127.0.0.1:${uiPort}`,
    pid: child.pid ?? -1,
    stop: () => stopChild(child),
  };
  try {
    await waitUntilReady(address, namespace, options.searchAttributes ?? [], options.startTimeoutMs ?? 60_000, () => {
      if (exited) {
        throw new Error(
          `temporal server start-dev exited (code ${exited.code}, signal ${exited.signal}):\n${output.join('\n')}`,
        );
      }
    });
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return server;
}

async function waitUntilReady(
  address: string,
  namespace: string,
  searchAttributes: readonly SearchAttributeSpec[],
  timeoutMs: number,
  checkAlive: () => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    checkAlive();
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 2_000 });
      await connection.workflowService.describeNamespace({ namespace });
      const listed = await connection.operatorService.listSearchAttributes({ namespace });
      const missing = searchAttributes.filter((sa) => !(sa.name in (listed.customAttributes ?? {})));
      if (missing.length === 0) return;
      lastError = new Error(`search attributes not yet visible: ${missing.map((m) => m.name).join(', ')}`);
    } catch (err) {
      lastError = err;
    } finally {
      await connection?.close().catch(() => undefined);
    }
    await sleep(250);
  }
  throw new Error(`Temporal dev server at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
