// A real client CLI from the npm registry for the drop-in tests (issue #12), pinned, installed into the user cache on
// first use (kept out of the project's own dependencies: hundreds of MB) and reused after. `.ci/run` prepares each
// ahead of the tests (`npx tsx test/support/clients/<name>.ts`).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The pinned package's binary `bin` (installs the package when missing); `dir`: the cache directory's name. */
export function ensureNpmClient(
  spec: { pkg: string; version: string; bin: string; dir: string },
  log: (line: string) => void = () => undefined,
): string {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'durable-context', spec.dir);
  const bin = join(dir, 'node_modules', '.bin', spec.bin);
  if (existsSync(bin)) return bin;
  const pinned = `${spec.pkg}@${spec.version}`;
  log(`Installing ${pinned} into ${dir} (npm, once)...`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', dir, pinned], { stdio: 'inherit' });
  if (!existsSync(bin)) throw new Error(`${pinned} installed no ${bin}`);
  return bin;
}
