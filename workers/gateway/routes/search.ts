// Search route (tenant key): SPEC §14 over the tenant's stored messages, archived ones included.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../../../infra/db/schema.js';
import { searchMessages } from '../../../infra/db/search.js';
import { routeQuery } from '../../../infra/db/searchQuery.js';
import type { Metrics } from '../../../infra/metrics/registry.js';
import { tenantAuth } from '../auth.js';

interface SearchQuerystring {
  q: string;
  sources?: string;
  excludeSources?: string;
  roles?: string;
  includeInactive?: boolean;
  sort?: 'relevance' | 'newest' | 'oldest';
  limit?: number;
  offset?: number;
}

const list = (v: string | undefined) =>
  v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

export function searchRoutes(deps: { db: Kysely<Database>; metrics: Metrics }) {
  return async (app: FastifyInstance) => {
    app.addHook('preHandler', tenantAuth(deps.db));
    app.get<{ Querystring: SearchQuerystring }>(
      '/v1/search',
      {
        schema: {
          tags: ['search'],
          summary:
            'Search the tenant’s messages (Latin via tsvector, CJK via trigram/bigram + LIKE), archived included',
          querystring: {
            type: 'object',
            required: ['q'],
            additionalProperties: false,
            properties: {
              q: { type: 'string', maxLength: 10_000 },
              sources: { type: 'string', description: 'comma-separated' },
              excludeSources: { type: 'string', description: 'comma-separated' },
              roles: { type: 'string', pattern: '^(system|user|assistant|tool)(,(system|user|assistant|tool))*$' },
              includeInactive: { type: 'boolean' },
              sort: { type: 'string', enum: ['relevance', 'newest', 'oldest'] },
              limit: { type: 'integer', minimum: 1, maximum: 100 },
              offset: { type: 'integer', minimum: 0 },
            },
          },
        },
      },
      async (request) => {
        const q = request.query;
        const end = deps.metrics.searchDuration.startTimer({ path: routeQuery(q.q) });
        try {
          const results = await searchMessages(deps.db, request.tenantId, q.q, {
            ...(list(q.sources) ? { sources: list(q.sources) } : {}),
            ...(list(q.excludeSources) ? { excludeSources: list(q.excludeSources) } : {}),
            ...(list(q.roles) ? { roles: list(q.roles) } : {}),
            includeInactive: q.includeInactive === true,
            sort: q.sort ?? 'relevance',
            limit: q.limit ?? 20,
            offset: q.offset ?? 0,
          });
          return { results };
        } finally {
          end();
        }
      },
    );
  };
}
