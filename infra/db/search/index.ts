// Message search (SPEC §14): tenant-scoped, inside withTenant, through the SECURITY DEFINER function
// dc_search_messages (migrations/0005). The planner turns the query into a request as data (planner.ts), the
// function runs it (sql.ts), the rows become results with snippets and context (results.ts). Callers import from here.
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { READ_ONLY, type TenantOptions, withTenant } from '../tenant.js';
import type { SearchOptions } from './options.js';
import { searchRequest } from './planner.js';
import { type SearchResult, toResult } from './results.js';
import { findRows } from './sql.js';

export {
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
  normaliseSearchOptions,
  type SearchOptions,
  type SearchSort,
} from './options.js';
export { type CjkClause, type Ordering, type SearchRequest, searchRequest, searchTuning } from './planner.js';
export type { SearchContextEntry, SearchResult } from './results.js';

/**
 * Read-only: one round trip (infra/db/tenant.ts). Generic plans: the statement that calls the search function (one
 * text per query shape, prepared by the pool's client) is planned once per connection, not for every search (~45 µs
 * of a no-hit search's ~0.5 ms). Nothing in it depends on the values: the function plans what does (its matches, for
 * the term's frequency) itself, whatever the transaction's plan_cache_mode, and restores that mode.
 */
const SEARCH_TRANSACTION: TenantOptions = { ...READ_ONLY, genericPlans: true };

/**
 * SPEC §14: the tenant's messages matching `query`, as results (§14.8). Anything that cannot be searched (not a
 * string, blank, no terms, no lexemes) gives `[]`; query content never throws. A result never comes from another
 * tenant: the search runs under withTenant, through the function that applies the transaction's tenant itself.
 */
export async function searchMessages(
  db: Kysely<Database>,
  tenantId: string,
  query: unknown,
  options: SearchOptions = {},
): Promise<SearchResult[]> {
  const request = searchRequest(tenantId, query, options);
  if (!request) return [];
  return withTenant(
    db,
    tenantId,
    async (tx) => (await findRows(tx, request)).map((row) => toResult(row, request.snippet)),
    SEARCH_TRANSACTION,
  );
}
