#!/usr/bin/env node
// `dctx` (package.json "bin"): runs workers/cli.ts under tsx, which the project ships as TypeScript sources.
// The loader is resolved from this package, so the command works from any directory.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const cli = fileURLToPath(new URL('../workers/cli.ts', import.meta.url));
const child = spawn(process.execPath, ['--import', loader, cli, ...process.argv.slice(2)], { stdio: 'inherit' });

// The child gets Ctrl-C from the terminal itself; other termination signals are passed on.
const ignore = () => undefined;
const forward = (signal) => () => child.kill(signal);
process.on('SIGINT', ignore);
process.on('SIGTERM', forward('SIGTERM'));
process.on('SIGHUP', forward('SIGHUP'));

child.on('error', (err) => {
  process.stderr.write(`dctx: cannot start node: ${err.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
