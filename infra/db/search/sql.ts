// Search SQL: one call of the SECURITY DEFINER function dc_search_messages (migrations/0005), which applies the
// transaction's tenant to every row it reads and keeps the GIN indexes usable (under RLS PostgreSQL cannot use
// them for ILIKE and @@). Every predicate is evaluated on the row itself — an index only finds candidates — so the
// results never depend on an index or on which plan PostgreSQL picks.
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';
import { callAsTenant } from '../tenant.js';
import type { SearchRequest } from './planner.js';

/** One row dc_search_messages returns: a hit, its session's fields and its neighbours. */
export interface ResultRow {
  id: number;
  session_id: string;
  role: string;
  timestamp: Date;
  tool_name: string | null;
  indexed_text: string;
  source: string;
  model: string | null;
  started_at: Date;
  prev_role: string | null;
  prev_content: string | null;
  next_role: string | null;
  next_content: string | null;
}

/**
 * One statement of its own: the page of hits in order, each with its text, session fields and neighbours (same
 * visibility, `(timestamp, id)` order). The function takes the tenant from app.tenant_id, which callAsTenant sets
 * while the plan argument is evaluated, and refuses the plan unless its tenant is that one.
 */
export async function findRows(db: Kysely<Database>, request: SearchRequest): Promise<ResultRow[]> {
  return callAsTenant(
    db,
    request.plan.tenant,
    sql`${JSON.stringify(request.plan)}::jsonb`,
    (plan) => sql<ResultRow>`
      SELECT r.id, r.session_id, r.role, r."timestamp", r.tool_name, r.indexed_text, r.source, r.model, r.started_at,
             r.prev_role, r.prev_content, r.next_role, r.next_content
        FROM dc_search_messages(${plan}, ${request.query ?? sql`NULL::tsquery`}) WITH ORDINALITY AS r
       ORDER BY r.ordinality`,
  );
}
