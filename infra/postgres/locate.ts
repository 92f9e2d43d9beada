// Finds the PostgreSQL to use: DATABASE_URL when set, else the local cluster prepared by ensure.sh.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { env } from '../config/env.js';

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

/** `databaseUrl` (default: the validated DATABASE_URL), else the local cluster of ensure.sh. */
export async function resolveDatabaseUrl(databaseUrl: string | null = env.DATABASE_URL): Promise<string> {
  return databaseUrl || ensureLocalPostgres();
}
