// The system under load: started as `npm start` starts it — `tsx workers/dev.ts` in a child process (its own process
// group) on free ports, with a temporary data directory and a fresh temporary database on the PostgreSQL server
// (DATABASE_URL, else the local cluster of infra/postgres/ensure.sh) — or a running gateway given by URL. `close()`
// stops the children (SIGTERM to the group, SIGKILL after a grace period) and drops the database (retried: an
// autovacuum worker can hold it for a while after a load).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { resolveDatabaseUrl } from '../../infra/postgres/locate.js';
import { createTestDatabase, dropDatabase } from '../../test/support/harness/db.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
/** Connections of the benchmark's own pool are named so that the CPU sampler can tell them from the product's. */
export const BENCH_APPLICATION_NAME = 'dc-bench';

export interface Stack {
  /** The gateway's origin, e.g. http://127.0.0.1:41234. */
  url: string;
  adminKey: string;
  /** The benchmark's own pool on the product's database (owner role: sees every tenant's rows); null: none given. */
  db: pg.Pool | null;
  /** The owner URL of the product's database (the physical-limit connections use it). */
  databaseUrl: string | null;
  /** The database's name (the CPU sampler picks its backends by it). */
  databaseName: string | null;
  /** The dev.ts child process (root of the product's process tree); null for a running gateway. */
  rootPid: number | null;
  /** The last lines dev.ts wrote to stderr (warnings, errors); empty for a running gateway. */
  stderr(): string;
  /** How long dev.ts took from its start to `Ready.` (ms); null for a running gateway. */
  readyAfterMs: number | null;
  close(): Promise<void>;
}

export interface StartOptions {
  /** config.yaml text (DURABLE_CONTEXT_CONFIG), e.g. providers for the chat mode. */
  configYaml?: string;
  /** Further environment of the child (provider keys). */
  env?: Record<string, string>;
  /** Profile the product's process: V8 CPU profiles (`*.cpuprofile`) are written here when it exits. */
  cpuProfileDir?: string;
  log: (line: string) => void;
}

function benchPool(connectionString: string): pg.Pool {
  const pool = new pg.Pool({ connectionString, max: 4, application_name: BENCH_APPLICATION_NAME });
  pool.on('error', () => undefined);
  return pool;
}

/** Waits for the `API:` line and `Ready.` of dev.ts; rejects when the child exits first or the time is up. */
function waitReady(child: ChildProcess, stderrTail: () => string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let api: string | null = null;
    const timer = setTimeout(
      () => reject(new Error(`dev.ts not ready within ${timeoutMs} ms:\n${stderrTail()}`)),
      timeoutMs,
    );
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`dev.ts exited (${code ?? signal}) before it was ready:\n${stderrTail()}`));
    };
    child.once('exit', onExit);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^API:\s+(http:\/\/\S+)\/v1/.exec(line);
      if (match) api = match[1]!;
      if (line.startsWith('Ready.') && api) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(api);
      }
    });
  });
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Signals the child's whole process group (dev.ts, the tsx wrapper, the Temporal dev server). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** The cleanups of every stack being started or running: `closeStartedStacks()` runs them (Ctrl-C, a failure). */
const cleanups = new Set<() => Promise<void>>();

/** Stops every stack this process started (also one still starting) and drops its database. */
export async function closeStartedStacks(): Promise<void> {
  await Promise.all([...cleanups].map((cleanup) => cleanup()));
}

export async function startStack(options: StartOptions): Promise<Stack> {
  const baseUrl = await resolveDatabaseUrl();
  const dataDir = await mkdtemp(join(tmpdir(), 'dc-bench-load-'));
  const removeDataDir = () => rm(dataDir, { recursive: true, force: true });
  cleanups.add(removeDataDir);
  const testDb = await createTestDatabase(baseUrl, { migrate: false }).catch(async (err: Error) => {
    cleanups.delete(removeDataDir);
    await removeDataDir();
    throw err;
  });
  cleanups.delete(removeDataDir);
  const adminKey = `admin_${randomBytes(18).toString('base64url')}`;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: testDb.url,
    GATEWAY_PORT: '0',
    TEMPORAL_PORT: '0',
    TEMPORAL_UI_PORT: '0',
    DURABLE_CONTEXT_ADMIN_KEY: adminKey,
    DURABLE_CONTEXT_DATA: dataDir,
    ...options.env,
  };
  if (options.configYaml !== undefined) {
    const file = join(dataDir, 'config.yaml');
    writeFileSync(file, options.configYaml);
    env.DURABLE_CONTEXT_CONFIG = file;
  } else delete env.DURABLE_CONTEXT_CONFIG;
  delete env.DURABLE_CONTEXT_METRICS_KEY;

  // --cpu-prof is not allowed in NODE_OPTIONS: a profiled run starts node itself, with tsx as its loader.
  const [command, args] = options.cpuProfileDir
    ? [process.execPath, ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`, '--import', 'tsx', 'workers/dev.ts']]
    : [TSX, ['workers/dev.ts']];
  const spawnedAt = Date.now();
  const child = spawn(command, args, {
    cwd: REPO_ROOT,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8_000);
  });
  const killOnExit = () => signalGroup(child, 'SIGKILL');
  process.once('exit', killOnExit);
  const db = benchPool(testDb.url);
  let closing: Promise<void> | null = null;
  const close = () => (closing ??= stopAndDrop());
  const stopAndDrop = async () => {
    cleanups.delete(close);
    if (alive(child)) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      signalGroup(child, 'SIGTERM');
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    // The Temporal dev server may outlive its parent for a moment: the whole group goes.
    signalGroup(child, 'SIGKILL');
    process.off('exit', killOnExit);
    await db.end().catch(() => undefined);
    await testDb.db.destroy();
    await dropDatabase(baseUrl, testDb.name, {
      attempts: 30,
      onRetry: (err, attempt) => options.log(`dropping ${testDb.name}: ${err.message} (attempt ${attempt}, retrying)`),
    }).catch((err: Error) => options.log(`could not drop ${testDb.name}: ${err.message} — drop it by hand`));
    await rm(dataDir, { recursive: true, force: true });
  };
  cleanups.add(close);
  try {
    const url = await waitReady(child, () => stderr, 180_000);
    const readyAfterMs = Date.now() - spawnedAt;
    return {
      url,
      adminKey,
      db,
      databaseUrl: testDb.url,
      databaseName: testDb.name,
      rootPid: child.pid ?? null,
      stderr: () => stderr,
      readyAfterMs,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A running gateway; `databaseUrl` (its database, as the owner role) enables lag, integrity and limit from SQL. */
export async function attachStack(options: { url: string; adminKey: string; databaseUrl?: string }): Promise<Stack> {
  const db = options.databaseUrl ? benchPool(options.databaseUrl) : null;
  let databaseName: string | null = null;
  if (db) databaseName = (await db.query<{ name: string }>('SELECT current_database() AS name')).rows[0]!.name;
  return {
    url: options.url.replace(/\/+$/, '').replace(/\/v1$/, ''),
    adminKey: options.adminKey,
    db,
    databaseUrl: options.databaseUrl ?? null,
    databaseName,
    rootPid: null,
    stderr: () => '',
    readyAfterMs: null,
    close: async () => {
      await db?.end().catch(() => undefined);
    },
  };
}
