// The real Codex CLI for the drop-in tests (issue #12): `@openai/codex`, pinned, installed from the npm registry into
// the user cache on first use (about 400 MB unpacked: kept out of the project's own dependencies) and reused after.
// `.ci/run` prepares it ahead of the tests (`npx tsx test/support/clients/codex.ts`). Codex runs offline against a
// custom model provider (the gateway); CODEX_HOME is a directory per test file.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CODEX_VERSION = '0.171.0';

/** The pinned `codex` binary (installs it when missing). */
export function ensureCodex(log: (line: string) => void = () => undefined): string {
  const dir = join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
    'durable-context',
    `codex-${CODEX_VERSION}`,
  );
  const bin = join(dir, 'node_modules', '.bin', 'codex');
  if (existsSync(bin)) return bin;
  log(`Installing @openai/codex@${CODEX_VERSION} into ${dir} (npm, once)...`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', dir, `@openai/codex@${CODEX_VERSION}`], {
    stdio: 'inherit',
  });
  if (!existsSync(bin)) throw new Error(`@openai/codex@${CODEX_VERSION} installed no ${bin}`);
  return bin;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(ensureCodex((line) => console.log(line)));
}
