// Operations routes: liveness (no key) and Prometheus metrics (behind `metricsKey` when one is configured).
// Schemas: contracts/http/ops.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Kysely, sql } from 'kysely';
import { errorResponses } from '../../../contracts/http/common.js';
import { Healthy, MetricsText, Unhealthy } from '../../../contracts/http/ops.js';
import type { Database } from '../../../infra/db/schema.js';
import type { Metrics } from '../../../infra/metrics/registry.js';
import { requireStaticKey } from '../staticKeys.js';

export interface OpsDeps {
  db: Kysely<Database>;
  metrics: Metrics;
  /** When set, `/metrics` requires `Authorization: Bearer <metricsKey>` (401 otherwise). */
  metricsKey?: string | null;
}

export function opsRoutes(deps: OpsDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/healthz',
      {
        schema: {
          tags: ['ops'],
          summary: 'Liveness: the database answers',
          security: [],
          response: { 200: Healthy, 503: Unhealthy, ...errorResponses(500) },
        },
      },
      async (_request, reply) => {
        try {
          await sql`SELECT 1`.execute(deps.db);
          return { ok: true };
        } catch {
          return reply.status(503).send({ ok: false, error: 'database unavailable' });
        }
      },
    );
    app.get(
      '/metrics',
      {
        schema: {
          tags: ['ops'],
          summary: 'Prometheus metrics (with a metrics key configured: Authorization: Bearer <metrics key>)',
          response: { 200: MetricsText, ...errorResponses(401, 500) },
        },
        ...(deps.metricsKey
          ? { onRequest: requireStaticKey(deps.metricsKey, { realm: 'metrics', what: 'metrics' }) }
          : {}),
      },
      async (_request, reply) => {
        const body = await deps.metrics.registry.metrics();
        return reply.type(deps.metrics.registry.contentType).send(body);
      },
    );
  };
}
