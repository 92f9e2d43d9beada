// `npm run worker`: the Temporal worker of the `conversations` task queue as its own process.
// Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default), DATABASE_URL (else the
// local cluster of infra/postgres/ensure.sh), DURABLE_CONTEXT_CONFIG (config.yaml path; ./config.yaml if present).
// SIGTERM/SIGINT: the Temporal runtime stops polling and lets running activities finish (shutdownGraceTime), then
// run() resolves; the connection and the pool are closed and the process exits 0.
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { createWorker } from './runtime/createWorker.js';
import { llmDepsFromConfig } from './runtime/llmDeps.js';

const config = loadConfig();
const db = createDb({ connectionString: await resolveDatabaseUrl() });
await migrateToLatest(db);
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const llm = llmDepsFromConfig(config);
const worker = await createWorker({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  db,
  baseConfig: config.compression,
  baseHostPolicy: config.hostPolicy,
  summarizer: null,
  ...llm,
});
console.log(`Worker polling task queue 'conversations' on ${process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}`);
console.log(
  llm.configured
    ? 'LLM providers configured: LLM summaries and chat backend mode available.'
    : 'No LLM provider configured: compactions use the deterministic fallback summary (SPEC §9.5).',
);
try {
  await worker.run();
} finally {
  await connection.close();
  await db.destroy();
}
console.log('Worker stopped.');
