// `npm start`: the whole system on embedded defaults, in one process, until Ctrl-C:
//   - PostgreSQL from DATABASE_URL, or else an embedded PGlite database under .data/pglite (with pg_trgm);
//   - the Temporal dev server with persistent SQLite state under .data/ and its Web UI (:8233);
//   - the worker and the HTTP gateway (:8080, OpenAPI at /docs).
// `npm run demo` (= `npm start -- --demo`) then imports the shipped sample conversations and prints what happened.
// Flags: --demo, --exit (stop after the demo). Env (infra/config/env.ts, README): DATABASE_URL, DATABASE_POOL_SIZE,
// TEMPORAL_PORT, TEMPORAL_UI_PORT, GATEWAY_PORT, DURABLE_CONTEXT_ADMIN_KEY(_PREVIOUS), DURABLE_CONTEXT_METRICS_KEY,
// DURABLE_CONTEXT_CONFIG, DURABLE_CONTEXT_DOCS_KEY, DURABLE_CONTEXT_CORS_ORIGINS, DURABLE_CONTEXT_LIMITS,
// DURABLE_CONTEXT_DATA (data dir, default ./.data), WORKER_SHUTDOWN_GRACE_SECONDS.

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime } from '@temporalio/worker';
import { respondDepsFrom } from '../activities/respond.js';
import { ConversationClient } from '../clients/conversationClient.js';
import { env } from '../infra/config/env.js';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb, READ_CONNECTIONS } from '../infra/db/connect.js';
import { KeyCache } from '../infra/db/keyCache.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { TurnTextListener } from '../infra/db/turnText.js';
import { chatProviderProblem } from '../infra/llm/providers.js';
import { createMetrics } from '../infra/metrics/registry.js';
import { describeContextEngine } from '../infra/plugins/contextEngines.js';
import { startEmbeddedPostgres } from '../infra/postgres/embedded.js';
import { startDevServer } from '../infra/temporal/devServer.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';
import { runDemo } from './demo.js';
import { buildGateway } from './gateway/app.js';
import { Conversations } from './gateway/conversations.js';
import { defaultModelFrom } from './gateway/defaults.js';
import { createWorker } from './runtime/createWorker.js';
import { llmDepsFromConfig } from './runtime/llmDeps.js';
import { closeHttp, handleShutdown, type ShutdownStep } from './runtime/shutdown.js';

const args = new Set(process.argv.slice(2));
const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = env.DURABLE_CONTEXT_DATA;
mkdirSync(dataDir, { recursive: true });
Runtime.install({
  logger: new DefaultLogger('WARN'),
  telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
});

function adminKey(): string {
  if (env.DURABLE_CONTEXT_ADMIN_KEY) return env.DURABLE_CONTEXT_ADMIN_KEY;
  const file = join(dataDir, 'admin-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = `admin_${randomBytes(24).toString('base64url')}`;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

const config = loadConfig();
/** Shutdown steps, first to last: the gateway, the worker, the database pool, the databases, Temporal. */
const stops: ShutdownStep[] = [];
const step = (name: string, run: () => Promise<void>): ShutdownStep => ({ name, run });

let databaseUrl = env.DATABASE_URL;
let maxConnections = env.DATABASE_POOL_SIZE;
if (!databaseUrl) {
  const embedded = await startEmbeddedPostgres({ dataDir: join(dataDir, 'pglite') });
  stops.unshift(step('embedded PostgreSQL', embedded.stop));
  databaseUrl = embedded.url;
  maxConnections = embedded.maxConnections;
  console.log(`PostgreSQL:  embedded PGlite in ${join(dataDir, 'pglite')} (set DATABASE_URL to use a server)`);
} else {
  console.log(`PostgreSQL:  ${databaseUrl.replace(/:[^:@/]*@/, ':***@')}`);
}
const db = createDb({ connectionString: databaseUrl, maxConnections });
stops.unshift(step('PostgreSQL pool', () => db.destroy()));
// Reads get their own few connections on a server: a status read never waits in the pool behind write
// transactions. The embedded database serves one connection: reads share it.
const readDb = maxConnections > 1 ? createDb({ connectionString: databaseUrl, maxConnections: READ_CONNECTIONS }) : db;
if (readDb !== db) stops.unshift(step('PostgreSQL read pool', () => readDb.destroy()));
await migrateToLatest(db);

const server = await startDevServer({
  grpcPort: env.TEMPORAL_PORT,
  uiPort: env.TEMPORAL_UI_PORT,
  dbFile: join(dataDir, 'temporal.sqlite'),
  // Write-ahead log, synced at checkpoints: a crash of any process loses nothing committed; the default rollback
  // journal synced every transaction and capped chat turns at ~9/s on two cores (bench:load --chat).
  sqlitePragmas: { journal_mode: 'wal', synchronous: 'normal' },
  searchAttributes: SEARCH_ATTRIBUTES,
});
stops.push(step('Temporal dev server', server.stop));

const metrics = createMetrics({ db });
const nativeConnection = await NativeConnection.connect({ address: server.address });
const llm = llmDepsFromConfig(config);
const worker = await createWorker({
  connection: nativeConnection,
  db,
  baseConfig: config.compression,
  baseHostPolicy: config.hostPolicy,
  contextEngine: config.context.engine,
  pluginDir: env.DURABLE_CONTEXT_PLUGIN_DIR,
  summarizer: null,
  metrics,
  webhooksAllowPrivate: env.DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE,
  shutdownGraceTime: `${env.WORKER_SHUTDOWN_GRACE_SECONDS} seconds`,
  ...llm,
});
const workerRun = worker.run();
stops.unshift(
  step('worker', async () => {
    // The Temporal runtime already begins shutting workers down on SIGINT/SIGTERM (it drains, then run() ends).
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await workerRun.catch(() => undefined);
    await llm.appServers?.close();
    await nativeConnection.close();
  }),
);

const connection = await Connection.connect({ address: server.address });
const key = adminKey();
// On a server, the text of streamed turns the worker runs is relayed over LISTEN/NOTIFY (infra/db/turnText.ts); the
// embedded database serves one connection, so there such a turn's text comes once stored.
const turnText = maxConnections > 1 ? new TurnTextListener(databaseUrl) : undefined;
if (turnText) stops.unshift(step('PostgreSQL turn text listener', () => turnText.close()));
// Likewise the tenant keys this gateway resolved are kept while PostgreSQL notifies it of changes (keyCache.ts).
const keys = maxConnections > 1 ? new KeyCache(databaseUrl) : undefined;
if (keys) {
  await keys.start();
  stops.unshift(step('PostgreSQL key listener', () => keys.close()));
}
const app = await buildGateway({
  db,
  readDb,
  conversations: new Conversations(db, new ConversationClient(connection), {
    turnMetrics: metrics,
    appendMetrics: metrics,
    readDb,
    writeConnections: maxConnections,
    chatProblem: (provider) => chatProviderProblem(llm.providers ?? null, provider, process.env),
    baseConfig: config.compression,
    turns: respondDepsFrom(llm),
    ...(turnText ? { turnText } : {}),
  }),
  metrics,
  adminKey: key,
  previousAdminKey: env.DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS,
  metricsKey: env.DURABLE_CONTEXT_METRICS_KEY,
  docsKey: env.DURABLE_CONTEXT_DOCS_KEY,
  corsOrigins: env.DURABLE_CONTEXT_CORS_ORIGINS,
  limits: env.DURABLE_CONTEXT_LIMITS,
  webhooksAllowPrivate: env.DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE,
  cacheTtl: config.promptCaching.cacheTtl,
  providers: llm.providers ?? null,
  defaultModel: defaultModelFrom(config),
  ...(keys ? { keys } : {}),
});
const apiUrl = await app.listen({ port: env.GATEWAY_PORT, host: '127.0.0.1' });
stops.unshift(step('Temporal client', () => connection.close()));
stops.unshift(closeHttp(app));

console.log(`API:         ${apiUrl}/v1`);
console.log(`Docs:        ${apiUrl}/docs`);
console.log(`Temporal UI: ${server.uiUrl}`);
console.log(`Engine:      ${await describeContextEngine(config.context.engine, env.DURABLE_CONTEXT_PLUGIN_DIR)}`);
console.log(`Admin key:   ${key}  (stored in ${join(dataDir, 'admin-key')})`);
console.log(
  llm.configured
    ? 'Summaries:   LLM provider configured (chat backend mode available)'
    : 'Summaries:   no LLM provider configured → deterministic extractive summaries (see README: LLM providers)',
);

const shutdown = handleShutdown(stops);

if (args.has('--demo')) {
  try {
    await runDemo({
      url: apiUrl,
      adminKey: key,
      uiUrl: server.uiUrl,
      samplesDir: join(root, 'samples'),
      log: console.log,
    });
  } catch (err) {
    console.error(`Demo failed: ${(err as Error).message}`);
    await shutdown(1);
  }
  if (args.has('--exit')) await shutdown(0);
}
console.log('Ready. Press Ctrl-C to stop.');
