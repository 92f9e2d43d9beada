// The real Codex CLI for the drop-in tests (issue #12): `@openai/codex`, pinned, installed from the npm registry into
// the user cache on first use (about 400 MB unpacked, npmClient.ts) and reused after. `.ci/run` prepares it ahead of
// the tests (`npx tsx test/support/clients/codex.ts`). Codex runs offline against a custom model provider (the
// gateway); CODEX_HOME is a directory per test file.
import { fileURLToPath } from 'node:url';
import { ensureNpmClient } from './npmClient.js';

export const CODEX_VERSION = '0.171.0';

/** The pinned `codex` binary (installs it when missing). */
export function ensureCodex(log: (line: string) => void = () => undefined): string {
  return ensureNpmClient(
    { pkg: '@openai/codex', version: CODEX_VERSION, bin: 'codex', dir: `codex-${CODEX_VERSION}` },
    log,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(ensureCodex((line) => console.log(line)));
}
