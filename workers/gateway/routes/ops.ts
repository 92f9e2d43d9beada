// Operations routes (no key): liveness and Prometheus metrics.
import type { FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../../infra/db/schema.js';
import type { Metrics } from '../../../infra/metrics/registry.js';

export function opsRoutes(deps: { db: Kysely<Database>; metrics: Metrics }) {
  return async (app: FastifyInstance) => {
    app.get(
      '/healthz',
      { schema: { tags: ['ops'], summary: 'Liveness: the database answers' } },
      async (_request, reply) => {
        try {
          await sql`SELECT 1`.execute(deps.db);
          return { ok: true };
        } catch {
          return reply.status(503).send({ ok: false, error: 'database unavailable' });
        }
      },
    );
    app.get('/metrics', { schema: { tags: ['ops'], summary: 'Prometheus metrics' } }, async (_request, reply) => {
      const body = await deps.metrics.registry.metrics();
      return reply.type(deps.metrics.registry.contentType).send(body);
    });
  };
}
