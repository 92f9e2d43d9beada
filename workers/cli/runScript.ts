// `dctx start` and `dctx migrate` run another entry point of this project (TypeScript, under tsx) in a child process.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = new URL('../../', import.meta.url);

/** Runs a TypeScript entry point of this project under tsx with inherited stdio; resolves with its exit code. */
export function runScript(relativePath: string): Promise<number> {
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const script = fileURLToPath(new URL(relativePath, ROOT));
  const child = spawn(process.execPath, ['--import', loader, script], { cwd: fileURLToPath(ROOT), stdio: 'inherit' });
  // Ctrl-C reaches the child through the terminal; keep this process alive until the child has stopped.
  const ignore = () => undefined;
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onTerm = forward('SIGTERM');
  const onHup = forward('SIGHUP');
  process.on('SIGINT', ignore);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
      resolve(code ?? (signal ? 128 + 2 : 1));
    });
  });
}
