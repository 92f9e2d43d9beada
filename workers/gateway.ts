// `npm run gateway`: the HTTP gateway as its own process (the worker runs elsewhere: `npm run worker`).
// Environment (infra/config/env.ts, README): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and the TLS / mTLS / API key
// variables (infra/temporal/connectionOptions.ts), DATABASE_URL, GATEWAY_PORT, GATEWAY_HOST, GATEWAY_BODY_LIMIT,
// DURABLE_CONTEXT_ADMIN_KEY, DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS, DURABLE_CONTEXT_METRICS_KEY, DURABLE_CONTEXT_DOCS_KEY,
// DURABLE_CONTEXT_CORS_ORIGINS, DURABLE_CONTEXT_LIMITS, DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE, DURABLE_CONTEXT_CONFIG.
// SIGTERM/SIGINT: stop accepting, finish in-flight requests (at most 10 s), close the pools, exit 0.

import { Connection } from '@temporalio/client';
import { respondDepsFrom } from '../activities/respond.js';
import { ConversationClient } from '../clients/conversationClient.js';
import { env } from '../infra/config/env.js';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb, READ_CONNECTIONS } from '../infra/db/connect.js';
import { KeyCache } from '../infra/db/keyCache.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { TurnTextListener } from '../infra/db/turnText.js';
import { chatProviderProblem, parseProvidersConfig } from '../infra/llm/providers.js';
import { createMetrics } from '../infra/metrics/registry.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { temporalTarget } from '../infra/temporal/connectionOptions.js';
import { buildGateway } from './gateway/app.js';
import { Conversations } from './gateway/conversations.js';
import { defaultModelFrom } from './gateway/defaults.js';
import { closeHttp, handleShutdown } from './runtime/shutdown.js';

const config = loadConfig();
// Read first: a missing or unreadable certificate stops the process before anything else starts.
const temporalAt = temporalTarget(env);
const providers = parseProvidersConfig(config.raw);
const databaseUrl = await resolveDatabaseUrl(env.DATABASE_URL);
const db = createDb({ connectionString: databaseUrl, maxConnections: env.DATABASE_POOL_SIZE });
// Reads get their own few connections: a status read never waits in the pool behind write transactions.
const readDb = createDb({ connectionString: databaseUrl, maxConnections: READ_CONNECTIONS });
await migrateToLatest(db);
// Lazy: the gateway serves reads from PostgreSQL even while Temporal is unreachable (those calls answer 503).
const connection = Connection.lazy({ ...temporalAt.connection, connectTimeout: '5 seconds' });
const temporal = new ConversationClient(connection, { namespace: temporalAt.namespace });
const metrics = createMetrics({ db });
// The text of streamed turns the worker runs reaches this process over one LISTEN connection (infra/db/turnText.ts).
const turnText = new TurnTextListener(databaseUrl);
// The tenant keys it resolved are kept while PostgreSQL notifies it of changes (infra/db/keyCache.ts).
const keys = new KeyCache(databaseUrl);
await keys.start();
const app = await buildGateway({
  db,
  readDb,
  conversations: new Conversations(db, temporal, {
    turnMetrics: metrics,
    appendMetrics: metrics,
    readDb,
    writeConnections: env.DATABASE_POOL_SIZE,
    chatProblem: (provider) => chatProviderProblem(providers, provider, process.env),
    baseConfig: config.compression,
    turns: respondDepsFrom({ providers, cacheTtl: config.promptCaching.cacheTtl }),
    turnText,
  }),
  metrics,
  adminKey: env.DURABLE_CONTEXT_ADMIN_KEY,
  previousAdminKey: env.DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS,
  metricsKey: env.DURABLE_CONTEXT_METRICS_KEY,
  docsKey: env.DURABLE_CONTEXT_DOCS_KEY,
  corsOrigins: env.DURABLE_CONTEXT_CORS_ORIGINS,
  limits: env.DURABLE_CONTEXT_LIMITS,
  webhooksAllowPrivate: env.DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE,
  cacheTtl: config.promptCaching.cacheTtl,
  providers,
  defaultModel: defaultModelFrom(config),
  bodyLimit: env.GATEWAY_BODY_LIMIT,
  keys,
  logger: true,
});
handleShutdown([
  closeHttp(app),
  { name: 'Temporal connection', run: () => connection.close() },
  { name: 'PostgreSQL turn text listener', run: () => turnText.close() },
  { name: 'PostgreSQL key listener', run: () => keys.close() },
  { name: 'PostgreSQL pool', run: () => db.destroy() },
  { name: 'PostgreSQL read pool', run: () => readDb.destroy() },
]);
const address = await app.listen({ port: env.GATEWAY_PORT, host: env.GATEWAY_HOST });
console.log(`API:  ${address}/v1`);
console.log(`Docs: ${address}/docs`);
console.log(`Temporal: ${temporalAt.description}`);
