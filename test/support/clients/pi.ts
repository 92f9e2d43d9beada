// The real pi coding agent for the drop-in tests (issue #12: another real client of the Anthropic dialect that runs
// offline): `@mariozechner/pi-coding-agent` (MIT), pinned, installed into the user cache on first use (about 200 MB,
// npmClient.ts). `.ci/run` prepares it ahead of the tests (`npx tsx test/support/clients/pi.ts`). pi talks to a
// custom provider of `api: "anthropic-messages"` (its models.json) with the official `@anthropic-ai/sdk`, streaming.
import { fileURLToPath } from 'node:url';
import { ensureNpmClient } from './npmClient.js';

export const PI_VERSION = '0.73.1';

/** The pinned `pi` binary (installs it when missing). */
export function ensurePi(log: (line: string) => void = () => undefined): string {
  return ensureNpmClient(
    { pkg: '@mariozechner/pi-coding-agent', version: PI_VERSION, bin: 'pi', dir: `pi-${PI_VERSION}` },
    log,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(ensurePi((line) => console.log(line)));
}
