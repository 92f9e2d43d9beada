// `npm run worker`: the Temporal worker of the `conversations` task queue as its own process.
// Environment (infra/config/env.ts, README): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS / mTLS / API key
// variables (infra/temporal/connectionOptions.ts), DATABASE_URL (else the local cluster of infra/postgres/ensure.sh),
// DURABLE_CONTEXT_CONFIG (config.yaml path; ./config.yaml if present). Refuses to start when the namespace lacks the
// search attributes (`dctx temporal setup` registers them): its workflows would fail every task.
// SIGTERM/SIGINT: the Temporal runtime stops polling and lets running activities finish (up to
// WORKER_SHUTDOWN_GRACE_SECONDS), then run() resolves; the connection and the pool are closed and the process exits 0.
import { NativeConnection } from '@temporalio/worker';
import { env } from '../infra/config/env.js';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { describeContextEngine } from '../infra/plugins/contextEngines.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { connectExplained, temporalTarget } from '../infra/temporal/connectionOptions.js';
import { requireSearchAttributes } from '../infra/temporal/searchAttributes.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';
import { createWorker } from './runtime/createWorker.js';
import { llmDepsFromConfig } from './runtime/llmDeps.js';

const config = loadConfig();
const temporal = temporalTarget(env);
const db = createDb({
  connectionString: await resolveDatabaseUrl(env.DATABASE_URL),
  maxConnections: env.DATABASE_POOL_SIZE,
});
await migrateToLatest(db);
const connection = await connectExplained(temporal, () => NativeConnection.connect(temporal.connection));
try {
  await requireSearchAttributes(connection.operatorService, temporal.namespace, SEARCH_ATTRIBUTES);
} catch (err) {
  await connection.close();
  await db.destroy();
  throw err;
}
const llm = llmDepsFromConfig(config);
const worker = await createWorker({
  connection,
  namespace: temporal.namespace,
  db,
  baseConfig: config.compression,
  baseHostPolicy: config.hostPolicy,
  contextEngine: config.context.engine,
  pluginDir: env.DURABLE_CONTEXT_PLUGIN_DIR,
  summarizer: null,
  webhooksAllowPrivate: env.DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE,
  shutdownGraceTime: `${env.WORKER_SHUTDOWN_GRACE_SECONDS} seconds`,
  ...llm,
});
console.log(`Worker polling task queue 'conversations' on ${temporal.description}`);
console.log(
  `On SIGTERM/SIGINT the worker polls no more and gives running activities ${env.WORKER_SHUTDOWN_GRACE_SECONDS} s ` +
    'to finish (WORKER_SHUTDOWN_GRACE_SECONDS); it cancels those still running, for another worker to retry.',
);
console.log(await describeContextEngine(config.context.engine, env.DURABLE_CONTEXT_PLUGIN_DIR));
console.log(
  llm.configured
    ? 'LLM providers configured: LLM summaries and chat backend mode available.'
    : 'No LLM provider configured: compactions use the deterministic extractive summariser (SPEC §19 summary_backend).',
);
try {
  await worker.run();
} finally {
  await llm.appServers?.close();
  await connection.close();
  await db.destroy();
}
console.log('Worker stopped.');
