// `npm start`: brings up the local stack on embedded defaults and keeps it running until Ctrl-C.
// Today: PostgreSQL (DATABASE_URL or the local cluster), migrations, and the Temporal dev server with persistent
// SQLite state under .data/ and its Web UI. The worker, the HTTP gateway and the demo arrive with later issues.
import { fileURLToPath } from 'node:url';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { startDevServer } from '../infra/temporal/devServer.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';

const dataDir = fileURLToPath(new URL('../.data/', import.meta.url));
const grpcPort = Number(process.env.TEMPORAL_PORT ?? 7233);
const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);

const databaseUrl = await resolveDatabaseUrl();
const db = createDb({ connectionString: databaseUrl, maxConnections: 2 });
const { applied } = await migrateToLatest(db);
await db.destroy();
console.log(`PostgreSQL: ${databaseUrl.replace(/:[^:@/]*@/, ':***@')} (${applied.length} migration(s) applied)`);

const server = await startDevServer({
  grpcPort,
  uiPort,
  dbFile: `${dataDir}temporal.sqlite`,
  searchAttributes: SEARCH_ATTRIBUTES,
});
console.log(`Temporal frontend: ${server.address}`);
console.log(`Temporal UI:       ${server.uiUrl}`);
console.log('Press Ctrl-C to stop.');

const shutdown = async () => {
  await server.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
