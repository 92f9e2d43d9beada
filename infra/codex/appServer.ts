// One `codex app-server` process (SPEC §15.2, DESIGN.md §5): the Codex agent's JSON-RPC protocol over stdio, one
// JSON object per line (no `jsonrpc` field). Opened with `initialize` then the `initialized` notification; the
// client's requests are answered by id, the server's notifications go to the listeners, and a request the server
// sends the client (an approval, which `approval_policy = "never"` should never cause) is refused at once, so a turn
// never waits on a question nobody answers. Closing stdin ends the process; a process that dies rejects every
// request still waiting, and its owner (pool.ts) starts another.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** How to start the process: `command app-server -c key=value ...` with CODEX_HOME. */
export interface AppServerLaunch {
  command: string;
  /** `-c key=value` overrides, already TOML-encoded values (launch.ts). */
  overrides: readonly string[];
  /** CODEX_HOME: the threads' rollouts live there, so a restarted process can resume them. */
  codexHome: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Ceiling of one request's answer (not of a turn, which is notifications), ms. */
  requestTimeoutMs?: number;
}

/** A JSON-RPC error the app-server answered with. */
export class AppServerRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`codex app-server ${method}: ${message} (${code})`);
    this.name = 'AppServerRpcError';
  }
}

/** The process ended (or could not start) before it answered. */
export class AppServerExitedError extends Error {
  constructor(detail: string) {
    super(`codex app-server exited: ${detail}`);
    this.name = 'AppServerExitedError';
  }
}

export type NotificationListener = (method: string, params: Record<string, unknown>) => void;

interface Waiting {
  method: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const CLIENT_INFO = { name: 'durable_context', title: 'durable-context', version: '0.1.0' };

export class AppServerProcess {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  private readonly listeners = new Set<NotificationListener>();
  private exitDetail: string | null = null;
  private stderrTail = '';
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly requestTimeoutMs: number,
  ) {
    this.exited = new Promise((resolve) => {
      const ended = (detail: string) => {
        if (this.exitDetail !== null) return;
        this.exitDetail = detail;
        const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
        for (const [id, w] of this.waiting) {
          clearTimeout(w.timer);
          w.reject(new AppServerExitedError(`${detail} while ${w.method} waited${tail ? ` (${tail})` : ''}`));
          this.waiting.delete(id);
        }
        resolve();
      };
      child.on('exit', (code, signal) => ended(signal ? `signal ${signal}` : `code ${code}`));
      child.on('error', (err) => ended(err.message));
    });
    createInterface({ input: child.stdout }).on('line', (line) => this.receive(line));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-4_000);
    });
    child.stdin.on('error', () => undefined); // a dead process: the exit handler answers the waiting requests
  }

  /** Spawns the process and completes the handshake; a process that cannot start rejects. */
  static async start(launch: AppServerLaunch): Promise<AppServerProcess> {
    mkdirSync(launch.codexHome, { recursive: true });
    const args = ['app-server', ...launch.overrides.flatMap((o) => ['-c', o])];
    const child = spawn(launch.command, args, {
      env: { ...launch.env, CODEX_HOME: launch.codexHome },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const server = new AppServerProcess(child, launch.requestTimeoutMs ?? 60_000);
    try {
      await server.request('initialize', { clientInfo: CLIENT_INFO, capabilities: null });
      server.notify('initialized');
    } catch (err) {
      await server.close();
      throw err;
    }
    return server;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitDetail === null;
  }

  /** Every notification the server sends, until the returned function removes the listener. */
  onNotification(listener: NotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  request<T = Record<string, unknown>>(method: string, params: unknown, timeoutMs?: number): Promise<T> {
    if (this.exitDetail !== null) return Promise.reject(new AppServerExitedError(this.exitDetail));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`codex app-server ${method}: no answer within ${timeoutMs ?? this.requestTimeoutMs} ms`));
      }, timeoutMs ?? this.requestTimeoutMs);
      this.waiting.set(id, { method, resolve: resolve as (value: unknown) => void, reject, timer });
      this.send({ id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    this.send(params === undefined ? { method } : { method, params });
  }

  /** Ends the process: stdin closed (a clean exit), killed if it lingers. */
  async close(): Promise<void> {
    if (this.exitDetail === null) {
      this.child.stdin.end();
      const killer = setTimeout(() => this.child.kill('SIGKILL'), 3_000);
      await this.exited;
      clearTimeout(killer);
    }
  }

  private send(message: Record<string, unknown>): void {
    if (this.exitDetail === null) this.child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  private receive(line: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // not protocol (the process logs to stderr; a stray line is ignored)
    }
    const { id, method } = message;
    if (typeof method === 'string' && id !== undefined) {
      // A question to the client (approval, elicitation): refused, so nothing waits on it.
      this.send({ id, error: { code: -32601, message: `durable-context does not answer ${method}` } });
      return;
    }
    if (typeof method === 'string') {
      const params = (message.params ?? {}) as Record<string, unknown>;
      for (const listener of this.listeners) listener(method, params);
      return;
    }
    if (typeof id !== 'number') return;
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    clearTimeout(w.timer);
    const error = message.error as { code?: number; message?: string } | undefined;
    if (error) w.reject(new AppServerRpcError(w.method, error.code ?? 0, error.message ?? 'error'));
    else w.resolve(message.result ?? {});
  }
}
