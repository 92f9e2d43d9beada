// Search route (tenant key): SPEC §14 over the tenant's stored messages, archived ones included. `GET /v1/search?q=`
// for short queries, `POST /v1/search` with a JSON body for long ones (a long CJK query does not fit in a URL).
// Both take the same options and the same query limit; a query SPEC §14.3 would cut is cut at 2,048 characters.
// Schemas: contracts/http/search.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses, TENANT_READ_ERRORS, TENANT_WRITE_ERRORS } from '../../../contracts/http/common.js';
import { SearchBody, SearchQuery, SearchResults } from '../../../contracts/http/search.js';
import { routeQuery } from '../../../engine/search/query.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import type { Metrics } from '../../../infra/metrics/registry.js';
import { requireTenant, type TenantRouteGate, tenantGate } from '../auth.js';
import type { PendingWrites } from '../pendingWrites.js';

/** Both forms of a search request: lists as comma-separated text (querystring) or as arrays (JSON body). */
type SearchRequest = SearchQuery | SearchBody;

const list = (v: string | string[] | undefined) =>
  Array.isArray(v)
    ? v
    : v
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;

export function searchRoutes(
  deps: TenantRouteGate & { metrics: Metrics; conversations: { pendingWrites: PendingWrites } },
): FastifyPluginAsyncTypebox {
  async function run(tenantId: string, q: SearchRequest) {
    const end = deps.metrics.searchDuration.startTimer({ path: routeQuery(q.q) });
    try {
      const sources = list(q.sources);
      const excludeSources = list(q.excludeSources);
      const roles = list(q.roles);
      const results = await searchMessages(deps.readDb ?? deps.db, tenantId, q.q, {
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

  return async (app) => {
    requireTenant(app, tenantGate(deps, deps.conversations.pendingWrites));
    const summary =
      'Search the tenant’s messages (Latin via tsvector, CJK via trigram/bigram + LIKE), archived included';
    app.get(
      '/v1/search',
      {
        schema: {
          tags: ['search'],
          summary,
          querystring: SearchQuery,
          response: { 200: SearchResults, ...errorResponses(...TENANT_READ_ERRORS) },
        },
      },
      async (request) => run(request.tenantId, request.query),
    );
    app.post(
      '/v1/search',
      {
        schema: {
          tags: ['search'],
          summary: `${summary}; the query in a JSON body (for long queries)`,
          body: SearchBody,
          response: { 200: SearchResults, ...errorResponses(...TENANT_WRITE_ERRORS) },
        },
        // Stores nothing: a read-only key may search this way too.
        config: { readOnly: true },
      },
      async (request) => run(request.tenantId, request.body),
    );
  };
}
