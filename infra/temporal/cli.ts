// Locates the Temporal CLI through find-cli.sh (env override, PATH, user cache, or a one-time `go install`).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const FIND_CLI = fileURLToPath(new URL('./find-cli.sh', import.meta.url));

export async function resolveTemporalCli(): Promise<string> {
  try {
    const { stdout } = await execFileAsync('bash', [FIND_CLI], {
      maxBuffer: 1024 * 1024,
      // A first-time build can take minutes on two cores.
      timeout: 20 * 60_000,
    });
    const path = stdout.trim().split('\n').pop() ?? '';
    if (!path) throw new Error('find-cli.sh printed no path');
    return path;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new Error(`Could not find or build the Temporal CLI: ${stderr.trim() || (err as Error).message}`);
  }
}
