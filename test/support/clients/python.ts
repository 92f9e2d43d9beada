// The real Python clients of the drop-in tests (issue #12): a virtual environment under the user cache with the
// packages of requirements.txt, pinned, created through pip (PyPI) on first use and reused while the requirements are
// unchanged. `.ci/run` prepares it ahead of the tests (`npx tsx test/support/clients/python.ts`); a test that finds
// it missing creates it, or fails at once naming what is missing and the command that installs it.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const REQUIREMENTS = join(HERE, 'requirements.txt');

/** The directory's scripts (e.g. `openai_chat.py`). */
export const clientScript = (name: string) => join(HERE, name);

/** The venv's python with every pinned client installed. */
export function ensurePythonClients(log: (line: string) => void = () => undefined): string {
  const requirements = readFileSync(REQUIREMENTS, 'utf8');
  const tag = createHash('sha256').update(requirements).digest('hex').slice(0, 12);
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'durable-context', `clients-${tag}-venv`);
  const python = join(dir, 'bin', 'python');
  const marker = join(dir, '.installed');
  if (existsSync(marker)) return python;
  const system = process.env.PYTHON ?? 'python3';
  try {
    execFileSync(system, ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `${system} is needed for the real-client tests: install it (apt-get install -y python3 python3-venv), then ` +
        'run npx tsx test/support/clients/python.ts',
    );
  }
  log(`Setting up ${dir} with ${REQUIREMENTS} (pip, once)...`);
  if (!existsSync(python)) execFileSync(system, ['-m', 'venv', dir], { stdio: 'inherit' });
  execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS], {
    stdio: 'inherit',
  });
  writeFileSync(marker, requirements);
  return python;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(ensurePythonClients((line) => console.log(line)));
}
