// The HTTP gateway (DESIGN.md §6): fastify with JSON schemas, OpenAPI at /docs (behind `docsKey` when set), bearer key
// per tenant, CORS for the origins the operator lists (cors.ts). Bodies are
// JSON in UTF-8 within the store's limits (jsonBody.ts), validated without type coercion (validators.ts); a request
// whose body never finishes is cut off after `requestTimeoutMs` (issue #9 §7).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { CacheTtl } from '../../engine/index.js';
import { NO_LIMITS, type RequestLimits } from '../../infra/config/requestLimits.js';
import type { KeyCache } from '../../infra/db/keyCache.js';
import type { Database } from '../../infra/db/schema.js';
import type { ProvidersConfig } from '../../infra/llm/providers.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import { adminKeysOf } from './auth.js';
import type { Conversations } from './conversations.js';
import { installCors } from './cors.js';
import { errorHandler, HttpError } from './errors.js';
import { installJsonBodyParser } from './jsonBody.js';
import { RequestLimiter } from './limiter.js';
import { adminRoutes } from './routes/admin.js';
import { anthropicMessagesRoutes } from './routes/anthropicMessages.js';
import { compactionRoutes } from './routes/compactions.js';
import { conversationRoutes } from './routes/conversations.js';
import { erasureRoutes } from './routes/erasure.js';
import { eventRoutes } from './routes/events.js';
import { historyRoutes } from './routes/history.js';
import { modelSwitchRoutes } from './routes/modelSwitch.js';
import { openAIChatRoutes } from './routes/openaiChat.js';
import { opsRoutes } from './routes/ops.js';
import { searchRoutes } from './routes/search.js';
import { webhookRoutes } from './routes/webhooks.js';
import { requireStaticKey } from './staticKeys.js';
import { installValidators } from './validators.js';

export interface GatewayDeps {
  db: Kysely<Database>;
  /**
   * The pool reads use (authentication, status, transcript, search): its own connections, so that a read never
   * waits in the pool behind write transactions under load. Default: `db`.
   */
  readDb?: Kysely<Database>;
  conversations: Conversations;
  metrics: Metrics;
  adminKey: string | null;
  /** The admin key being rotated out (`DURABLE_CONTEXT_ADMIN_KEY_PREVIOUS`): valid beside `adminKey`. */
  previousAdminKey?: string | null;
  /** Webhooks may go to loopback, private and link-local addresses (DURABLE_CONTEXT_WEBHOOKS_ALLOW_PRIVATE). */
  webhooksAllowPrivate?: boolean;
  /** When set, `/metrics` requires this bearer key. */
  metricsKey?: string | null;
  /** When set, `/docs` (the UI and the OpenAPI document) requires this key: bearer, or HTTP Basic's password. */
  docsKey?: string | null;
  /** Process-wide default request limits (`DURABLE_CONTEXT_LIMITS`); a tenant's policy `limits` replace them. */
  limits?: RequestLimits;
  /** Origins allowed cross-origin requests (`*`: any); empty or absent: CORS off. */
  corsOrigins?: readonly string[];
  cacheTtl: CacheTtl | null;
  /** config.yaml `providers:` (the caching route of the prepared context); null or absent: none configured. */
  providers?: ProvidersConfig | null;
  defaultModel: { model: string; provider: string | null; contextLength: number | null };
  /** Where the providers' API keys are read (default: process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** The tenant keys this gateway keeps while PostgreSQL notifies it of changes; absent: looked up every time. */
  keys?: KeyCache;
  /** Largest accepted request body in bytes (default 1 MiB). */
  bodyLimit?: number;
  /** Time to receive a whole request, headers and body (default 30 s). */
  requestTimeoutMs?: number;
  logger?: boolean;
}

/** Validation messages name the field as a path; the store's text rule gets words instead of its format name. */
function validationMessage(
  errors: ReadonlyArray<{ instancePath: string; message?: string; params?: unknown }>,
  part: string,
) {
  return errors
    .map((e) => {
      const at = `${part}${e.instancePath.replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.')}`;
      const format = (e.params as { format?: string } | undefined)?.format;
      const text = format === 'dc-text' ? 'must be text without NUL characters or unpaired surrogates' : e.message;
      return `${at} ${text}`;
    })
    .join(', ');
}

export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const requestTimeout = deps.requestTimeoutMs ?? 30_000;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: deps.bodyLimit ?? 1024 * 1024,
    requestTimeout,
    // Node checks request timeouts on this interval (default 30 s), and applies the headers timeout (default 60 s)
    // instead while it is longer: check every second, with both bounds the same, so the bound holds.
    http: { connectionsCheckingInterval: 1_000, headersTimeout: requestTimeout },
    schemaErrorFormatter: (errors, dataVar) => new Error(validationMessage(errors, dataVar)),
  });
  installValidators(app);
  installJsonBodyParser(app);
  app.setErrorHandler(errorHandler);
  installCors(app, deps.corsOrigins ?? []);
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
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    ...(deps.docsKey
      ? { uiHooks: { onRequest: requireStaticKey(deps.docsKey, { realm: 'docs', what: 'docs', basic: true }) } }
      : {}),
  });
  await app.register(opsRoutes(deps));
  await app.register(adminRoutes(deps));
  // One limiter for every tenant route of this gateway (limits are per gateway process: limiter.ts).
  const limiter = new RequestLimiter({ onRefused: (limit) => deps.metrics.limitRefusals.inc({ limit }) });
  const tenantDeps = { ...deps, requestLimits: { limiter, defaults: deps.limits ?? NO_LIMITS } };
  await app.register(
    erasureRoutes({
      db: deps.db,
      adminKeys: adminKeysOf(deps),
      temporal: deps.conversations.temporal.client,
      ...(deps.keys ? { keys: deps.keys } : {}),
    }),
  );
  await app.register(conversationRoutes(tenantDeps));
  await app.register(historyRoutes({ ...tenantDeps, pendingWrites: deps.conversations.pendingWrites }));
  await app.register(modelSwitchRoutes(tenantDeps));
  await app.register(eventRoutes(tenantDeps));
  await app.register(webhookRoutes(tenantDeps));
  await app.register(compactionRoutes(tenantDeps));
  await app.register(searchRoutes(tenantDeps));
  await app.register(openAIChatRoutes(tenantDeps));
  await app.register(anthropicMessagesRoutes(tenantDeps));
  // What the gateway still commits after answering (drop-in replies): logged if it fails, finished before close.
  deps.conversations.pendingWrites.reportTo((err, where) =>
    app.log.warn({ err, ...where }, 'a reply the client was given could not be stored (its next request carries it)'),
  );
  app.addHook('onClose', () => deps.conversations.pendingWrites.drain());
  return app;
}
