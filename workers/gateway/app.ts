// The HTTP gateway (DESIGN.md §6): fastify with JSON schemas, OpenAPI at /docs, bearer key per tenant.
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { CacheTtl } from '../../engine/index.js';
import type { Database } from '../../infra/db/schema.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import type { ConversationClient } from '../../infra/temporal/conversationClient.js';
import { errorHandler, HttpError } from './errors.js';
import { adminRoutes } from './routes/admin.js';
import { compactionRoutes } from './routes/compactions.js';
import { conversationRoutes } from './routes/conversations.js';
import { opsRoutes } from './routes/ops.js';
import { searchRoutes } from './routes/search.js';

export interface GatewayDeps {
  db: Kysely<Database>;
  conversations: ConversationClient;
  metrics: Metrics;
  adminKey: string | null;
  cacheTtl: CacheTtl | null;
  defaultModel: { model: string; provider: string | null; contextLength: number | null };
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimit?: number;
  logger?: boolean;
}

export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: deps.bodyLimit ?? 1024 * 1024,
    ajv: { customOptions: { allErrors: false, coerceTypes: 'array', removeAdditional: false } },
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request) => {
    throw new HttpError(404, `no route ${request.method} ${request.url.split('?')[0]}`);
  });
  app.addHook('onResponse', async (request, reply) => {
    deps.metrics.httpRequests.inc({ route: request.routeOptions.url ?? 'unknown', status: String(reply.statusCode) });
  });
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'durable-context',
        version: '0.1.0',
        description: 'Durable, compacting context store for AI-agent conversations',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  await app.register(opsRoutes(deps));
  await app.register(adminRoutes(deps));
  await app.register(conversationRoutes(deps));
  await app.register(compactionRoutes(deps));
  await app.register(searchRoutes(deps));
  return app;
}
