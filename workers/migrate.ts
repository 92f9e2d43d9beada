// `npm run migrate`: applies pending migrations to DATABASE_URL (or the local cluster prepared by ensure.sh).
import { env } from '../infra/config/env.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';

const db = createDb({ connectionString: await resolveDatabaseUrl(env.DATABASE_URL), maxConnections: 1 });
try {
  const { applied } = await migrateToLatest(db);
  console.log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'Database is up to date.');
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
} finally {
  await db.destroy();
}
