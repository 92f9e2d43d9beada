// Message search (SPEC §14): tenant-scoped (callAsTenant, infra/db/tenant.ts), through the SECURITY DEFINER function
// dc_search_messages (migrations/0005). The planner turns the query into a request as data (planner.ts), the
// function runs it (sql.ts), the rows become results with snippets and context (results.ts). Callers import from here.
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
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
 * SPEC §14: the tenant's messages matching `query`, as results (§14.8). Anything that cannot be searched (not a
 * string, blank, no terms, no lexemes) gives `[]`; query content never throws. A result never comes from another
 * tenant: the search is one statement (no transaction: `db` must not be one) through the function that applies the
 * tenant callAsTenant sets for that statement alone.
 */
export async function searchMessages(
  db: Kysely<Database>,
  tenantId: string,
  query: unknown,
  options: SearchOptions = {},
): Promise<SearchResult[]> {
  const request = searchRequest(tenantId, query, options);
  if (!request) return [];
  return (await findRows(db, request)).map((row) => toResult(row, request.snippet));
}
