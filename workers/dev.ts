// `npm start`: brings up the local stack on embedded defaults and keeps it running until Ctrl-C: PostgreSQL
// (DATABASE_URL or the local cluster), migrations, the Temporal dev server with persistent SQLite state under .data/
// and its Web UI, and the worker. The HTTP gateway and the demo arrive with a later issue.
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { startDevServer } from '../infra/temporal/devServer.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';
import { createWorker } from './createWorker.js';

const dataDir = fileURLToPath(new URL('../.data/', import.meta.url));
const grpcPort = Number(process.env.TEMPORAL_PORT ?? 7233);
const uiPort = Number(process.env.TEMPORAL_UI_PORT ?? 8233);

const config = loadConfig();
const databaseUrl = await resolveDatabaseUrl();
const db = createDb({ connectionString: databaseUrl });
const { applied } = await migrateToLatest(db);
console.log(`PostgreSQL: ${databaseUrl.replace(/:[^:@/]*@/, ':***@')} (${applied.length} migration(s) applied)`);

const server = await startDevServer({
  grpcPort,
  uiPort,
  dbFile: `${dataDir}temporal.sqlite`,
  searchAttributes: SEARCH_ATTRIBUTES,
});
console.log(`Temporal frontend: ${server.address}`);
console.log(`Temporal UI:       ${server.uiUrl}`);

const connection = await NativeConnection.connect({ address: server.address });
const worker = await createWorker({ connection, db, baseConfig: config.compression, summarizer: null });
console.log("Worker:            polling task queue 'conversations' (no LLM provider: fallback summaries)");
console.log('Press Ctrl-C to stop.');

const running = worker.run();
const shutdown = async () => {
  worker.shutdown();
  await running.catch(() => undefined);
  await connection.close();
  await db.destroy();
  await server.stop();
  process.exit(0);
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
await running;
