// `npm run gateway`: the HTTP gateway as its own process (the worker runs elsewhere: `npm run worker`).
// Environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, DATABASE_URL, DURABLE_CONTEXT_ADMIN_KEY, GATEWAY_PORT (8080),
// GATEWAY_HOST (127.0.0.1), GATEWAY_BODY_LIMIT (bytes), DURABLE_CONTEXT_CONFIG.
import { Connection } from '@temporalio/client';
import { loadConfig } from '../infra/config/loadConfig.js';
import { createDb } from '../infra/db/connect.js';
import { migrateToLatest } from '../infra/db/migrate.js';
import { createMetrics } from '../infra/metrics/registry.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { ConversationClient } from '../infra/temporal/conversationClient.js';
import { buildGateway } from './gateway/app.js';
import { defaultModelFrom } from './gateway/defaults.js';

const config = loadConfig();
const db = createDb({ connectionString: await resolveDatabaseUrl() });
await migrateToLatest(db);
const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const app = await buildGateway({
  db,
  conversations: new ConversationClient(connection, { namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' }),
  metrics: createMetrics({ db }),
  adminKey: process.env.DURABLE_CONTEXT_ADMIN_KEY ?? null,
  cacheTtl: config.promptCaching.cacheTtl,
  defaultModel: defaultModelFrom(config),
  bodyLimit: Number(process.env.GATEWAY_BODY_LIMIT ?? 1024 * 1024),
  logger: true,
});
const address = await app.listen({
  port: Number(process.env.GATEWAY_PORT ?? 8080),
  host: process.env.GATEWAY_HOST ?? '127.0.0.1',
});
console.log(`API:  ${address}/v1`);
console.log(`Docs: ${address}/docs`);
