// Per-test-file isolation: each file gets its own database (UTF-8, C.UTF-8 ctype), migrated, dropped afterwards.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { createDb } from '../../infra/db/connect.js';
import { migrateToLatest } from '../../infra/db/migrate.js';
import type { Database } from '../../infra/db/schema.js';

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
      await adminQuery(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
