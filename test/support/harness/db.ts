// Per-test-file isolation: each file gets its own database (UTF-8, C.UTF-8 ctype), migrated, dropped afterwards.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createDb } from '../../../infra/db/connect.js';
import { migrateToLatest } from '../../../infra/db/migrate.js';
import type { Database } from '../../../infra/db/schema.js';

export interface TestDatabase {
  name: string;
  url: string;
  db: Kysely<Database>;
  drop(): Promise<void>;
}

async function adminQuery(baseUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export interface DropOptions {
  /** `WITH (FORCE)`: end the sessions still on the database (default true). */
  force?: boolean;
  /** Tries in all (default 10). */
  attempts?: number;
  /** Called before each retry with the error that caused it. */
  onRetry?: (error: Error, attempt: number) => void | Promise<void>;
}

/**
 * Whether a failed DROP DATABASE may succeed when tried again: the database is still in use (55006), or a session on
 * it could not be terminated (42501 from the terminate step: under load an autovacuum worker, which the owner may end
 * only as a member of pg_signal_backend — infra/postgres/ensure.sh grants it — is on the database until it finishes).
 */
function isTransientDropError(error: unknown): boolean {
  const { code, message, detail } = error as { code?: string; message?: string; detail?: string };
  if (code === '55006') return true;
  return code === '42501' && /terminat/i.test(`${message ?? ''} ${detail ?? ''}`);
}

/** DROP DATABASE IF EXISTS, retried a bounded number of times (short growing backoff) on transient errors only. */
export async function dropDatabase(baseUrl: string, name: string, options: DropOptions = {}): Promise<void> {
  const statement = `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)}${options.force === false ? '' : ' WITH (FORCE)'}`;
  const attempts = options.attempts ?? 10;
  for (let attempt = 1; ; attempt++) {
    try {
      await adminQuery(baseUrl, statement);
      return;
    } catch (error) {
      if (attempt >= attempts || !isTransientDropError(error)) throw error;
      await options.onRetry?.(error as Error, attempt);
      await sleep(100 * attempt);
    }
  }
}

export async function createTestDatabase(baseUrl: string, options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `dc_test_${randomBytes(5).toString('hex')}`;
  await adminQuery(
    baseUrl,
    `CREATE DATABASE ${name} ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8' TEMPLATE template0`,
  );
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = createDb({ connectionString: url.toString(), maxConnections: 5 });
  if (options.migrate ?? true) await migrateToLatest(db);
  return {
    name,
    url: url.toString(),
    db,
    drop: async () => {
      await db.destroy();
      await dropDatabase(baseUrl, name);
    },
  };
}
