// Search route (tenant key): SPEC §14 over the tenant's stored messages, archived ones included. `GET /v1/search?q=`
// for short queries, `POST /v1/search` with a JSON body for long ones (a long CJK query does not fit in a URL).
// Both take the same options and the same query limit; a query SPEC §14.3 would cut is cut at 2,048 characters.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { routeQuery } from '../../../engine/search/query.js';
import type { Database } from '../../../infra/db/schema.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import type { Metrics } from '../../../infra/metrics/registry.js';
import { tenantAuth } from '../auth.js';
import { offsetSchema, textSchema } from '../schemas.js';

/** The longest query text accepted (SPEC §14.9: a query of 10,000 characters is cut to 2,048 and completes). */
export const MAX_QUERY_CHARS = 10_000;

const ROLE_LIST = '^(system|user|assistant|tool)(,(system|user|assistant|tool))*$';
const SORTS = ['relevance', 'newest', 'oldest'] as const;

interface SearchRequest {
  q: string;
  sources?: string | string[];
  excludeSources?: string | string[];
  roles?: string | string[];
  includeInactive?: boolean;
  sort?: (typeof SORTS)[number];
  limit?: number;
  offset?: number;
}

const common = {
  includeInactive: { type: 'boolean' },
  sort: { type: 'string', enum: SORTS },
  limit: { type: 'integer', minimum: 1, maximum: 100 },
  offset: offsetSchema,
} as const;

const querystring = {
  type: 'object',
  required: ['q'],
  additionalProperties: false,
  properties: {
    q: textSchema(MAX_QUERY_CHARS),
    sources: { ...textSchema(2_000), description: 'comma-separated' },
    excludeSources: { ...textSchema(2_000), description: 'comma-separated' },
    roles: { type: 'string', pattern: ROLE_LIST },
    ...common,
  },
} as const;

const sourceList = { type: 'array', maxItems: 100, items: textSchema(64, 1) } as const;
const body = {
  type: 'object',
  required: ['q'],
  additionalProperties: false,
  properties: {
    q: textSchema(MAX_QUERY_CHARS),
    sources: sourceList,
    excludeSources: sourceList,
    roles: { type: 'array', items: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] } },
    ...common,
  },
} as const;

const list = (v: string | string[] | undefined) =>
  Array.isArray(v)
    ? v
    : v
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;

export function searchRoutes(deps: { db: Kysely<Database>; metrics: Metrics }) {
  async function run(tenantId: string, q: SearchRequest) {
    const end = deps.metrics.searchDuration.startTimer({ path: routeQuery(q.q) });
    try {
      const sources = list(q.sources);
      const excludeSources = list(q.excludeSources);
      const roles = list(q.roles);
      const results = await searchMessages(deps.db, tenantId, q.q, {
        ...(sources ? { sources } : {}),
        ...(excludeSources ? { excludeSources } : {}),
        ...(roles ? { roles } : {}),
        includeInactive: q.includeInactive === true,
        sort: q.sort ?? 'relevance',
        limit: q.limit ?? 20,
        offset: q.offset ?? 0,
      });
      return { results };
    } finally {
      end();
    }
  }

  return async (app: FastifyInstance) => {
    app.addHook('preHandler', tenantAuth(deps.db));
    const summary =
      'Search the tenant’s messages (Latin via tsvector, CJK via trigram/bigram + LIKE), archived included';
    app.get<{ Querystring: SearchRequest }>(
      '/v1/search',
      { schema: { tags: ['search'], summary, querystring } },
      async (request) => run(request.tenantId, request.query),
    );
    app.post<{ Body: SearchRequest }>(
      '/v1/search',
      { schema: { tags: ['search'], summary: `${summary}; the query in a JSON body (for long queries)`, body } },
      async (request) => run(request.tenantId, request.body),
    );
  };
}
