// The bench's own Python environment (issue #15 §1): a virtual environment under ~/.cache/durable-context with
// compactbench pinned, created on first run through pip (PyPI), reused after.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const COMPACTBENCH_VERSION = '0.1.0';

function hasCompactbench(python: string): boolean {
  try {
    const version = execFileSync(python, ['-c', 'import importlib.metadata as m; print(m.version("compactbench"))'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return version.trim() === COMPACTBENCH_VERSION;
  } catch {
    return false;
  }
}

/** The venv's python with compactbench==0.1.0 installed (creates or repairs the venv when needed). */
export function ensureCompactbench(log: (line: string) => void): string {
  const dir = join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
    'durable-context',
    `compactbench-${COMPACTBENCH_VERSION}-venv`,
  );
  const python = join(dir, 'bin', 'python');
  if (existsSync(python) && hasCompactbench(python)) return python;
  log(`Setting up ${dir} with compactbench==${COMPACTBENCH_VERSION} (pip, once)...`);
  const system = process.env.PYTHON ?? 'python3';
  if (!existsSync(python)) execFileSync(system, ['-m', 'venv', dir], { stdio: 'inherit' });
  execFileSync(python, ['-m', 'pip', 'install', '--quiet', `compactbench==${COMPACTBENCH_VERSION}`], {
    stdio: 'inherit',
  });
  if (!hasCompactbench(python)) throw new Error(`compactbench ${COMPACTBENCH_VERSION} is not importable in ${dir}`);
  return python;
}
