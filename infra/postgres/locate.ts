// Finds the PostgreSQL to use: DATABASE_URL when set, else the local cluster prepared by ensure.sh.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const ENSURE = fileURLToPath(new URL('./ensure.sh', import.meta.url));

export async function ensureLocalPostgres(): Promise<string> {
  try {
    const { stdout } = await execFileAsync('bash', [ENSURE], { timeout: 120_000 });
    const url = stdout.trim().split('\n').pop();
    if (!url) throw new Error('ensure.sh printed no DATABASE_URL');
    return url;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? '';
    throw new Error(
      `DATABASE_URL is not set and the local PostgreSQL could not be prepared: ${stderr.trim() || (err as Error).message}`,
    );
  }
}

export async function resolveDatabaseUrl(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return env.DATABASE_URL || ensureLocalPostgres();
}
