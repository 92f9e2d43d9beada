// `npm run gateway`: the HTTP gateway as its own process (the worker runs elsewhere: `npm run worker`).
// Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, DATABASE_URL, DURABLE_CONTEXT_ADMIN_KEY, GATEWAY_PORT (8080),
// GATEWAY_HOST (127.0.0.1), GATEWAY_BODY_LIMIT (bytes), DURABLE_CONTEXT_METRICS_KEY, DURABLE_CONTEXT_CONFIG.
// SIGTERM/SIGINT: stop accepting, finish in-flight requests (at most 10 s), close the pools, exit 0.
import { Connection } from '@temporalio/client';
import { Conversations } from '../clients/conversations.js';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { chatProviderProblem, parseProvidersConfig } from '../infra/llm/providers.js';
import { createMetrics } from '../infra/metrics/registry.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { ConversationClient } from '../clients/conversationClient.js';
import { buildGateway } from './gateway/app.js';
import { defaultModelFrom } from './gateway/defaults.js';
import { closeHttp, handleShutdown } from './runtime/shutdown.js';

const config = loadConfig();
const providers = parseProvidersConfig(config.raw);
const db = createDb({ connectionString: await resolveDatabaseUrl() });
await migrateToLatest(db);
// Lazy: the gateway serves reads from PostgreSQL even while Temporal is unreachable (those calls answer 503).
const connection = Connection.lazy({
  address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
  connectTimeout: '5 seconds',
});
const temporal = new ConversationClient(connection, { namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
const app = await buildGateway({
  db,
  conversations: new Conversations(db, temporal, {
    chatProblem: (row) => chatProviderProblem(providers, row.provider, process.env),
  }),
  metrics: createMetrics({ db }),
  adminKey: process.env.DURABLE_CONTEXT_ADMIN_KEY ?? null,
  metricsKey: process.env.DURABLE_CONTEXT_METRICS_KEY || null,
  cacheTtl: config.promptCaching.cacheTtl,
  defaultModel: defaultModelFrom(config),
  bodyLimit: Number(process.env.GATEWAY_BODY_LIMIT ?? 1024 * 1024),
  logger: true,
});
handleShutdown([
  closeHttp(app),
  { name: 'Temporal connection', run: () => connection.close() },
  { name: 'PostgreSQL pool', run: () => db.destroy() },
]);
const address = await app.listen({
  port: Number(process.env.GATEWAY_PORT ?? 8080),
  host: process.env.GATEWAY_HOST ?? '127.0.0.1',
});
console.log(`API:  ${address}/v1`);
console.log(`Docs: ${address}/docs`);
