// One run of a real client CLI (Codex, pi) to its end, for the drop-in tests: its exit code and output; killed after
// `timeoutMs` (its exit code is then null).
import { spawn } from 'node:child_process';

/**
 * Time zones 26 hours apart, for a client that writes the local date into its prompt: a run in the first is always
 * on an earlier calendar day than a run in the second (a session resumed the next day, whatever the time).
 */
export const DAY_BEFORE_TZ = 'Etc/GMT+12';
export const DAY_AFTER_TZ = 'Etc/GMT-14';

export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

export function runCli(
  bin: string,
  args: string[],
  options: { cwd: string; env: Record<string, string | undefined>; timeoutMs?: number },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}
