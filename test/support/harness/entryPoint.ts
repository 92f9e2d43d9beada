// The project's entry points as an operator runs them: `workers/gateway.ts`, `workers/worker.ts` and `workers/cli.ts`
// (dctx) in child processes under tsx with a given environment, their output collected, waited for by pattern, and
// killed at the end of a test. Used by the Temporal setup and several-processes tests (issue #14 §7).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface EntryPoint {
  child: ChildProcess;
  /** The first match of `pattern` in the process's output (stdout and stderr), waiting for it if need be. */
  expectOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Everything it printed so far. */
  output(): string;
  /** Exit code (or signal name) once the process has ended and its output is read. */
  exit: Promise<number | string>;
}

/** Starts `script` (relative to the checkout) with `process.env` plus `env`. */
export function startEntryPoint(script: string, env: Record<string, string>): EntryPoint {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onOutput = (chunk: Buffer) => {
    output += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onOutput);
  child.stderr!.on('data', onOutput);
  let closed = false;
  const exit = new Promise<number | string>((resolve) =>
    child.once('close', (code, signal) => {
      closed = true;
      for (const l of listeners) l();
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  const expectOutput = (pattern: RegExp, timeoutMs = 90_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const done = (fn: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        fn();
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${script}: no ${pattern} within ${timeoutMs} ms; output:\n${output}`))),
        timeoutMs,
      );
      const check = () => {
        const match = output.match(pattern);
        if (match) done(() => resolve(match));
        else if (closed) done(() => reject(new Error(`${script} exited before ${pattern}; output:\n${output}`)));
      };
      listeners.add(check);
      check();
    });
  return { child, expectOutput, output: () => output, exit };
}

/** SIGKILLs a process a test left running (e.g. after a failed assertion) and waits until it is gone. */
export async function killEntryPoint(entry: EntryPoint | undefined): Promise<number | string | undefined> {
  if (!entry) return undefined;
  if (entry.child.exitCode === null && entry.child.signalCode === null) entry.child.kill('SIGKILL');
  return entry.exit;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `dctx <args>` to its end with `process.env` plus `env` (a value of `undefined` removes the variable). */
export function runDctx(args: readonly string[], env: Record<string, string | undefined>): Promise<CliRun> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete childEnv[name];
    else childEnv[name] = value;
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'workers/cli.ts', ...args],
      { cwd: REPO_ROOT, env: childEnv, timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
