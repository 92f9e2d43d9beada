// 0010: search planned in two parts, the second one reused (issue #11 item 6, SPEC §14). Never edit a migration that
// has landed; add a new one.
//
// dc_search_messages (0005) ran one dynamic statement per search: the hits, then per hit its text, its session and
// its visible neighbours. PostgreSQL planned all of it for every search (about 1.1 ms of the 2 ms a no-hit search
// took at 100k messages), although only the hits depend on the query.
// - `dc_search_sql(plan, tenant)` now returns the statement of the page of hits only (id, session_id, role,
//   timestamp, tool_name, in order, OFFSET and LIMIT applied). Matching, filters, the recency probe and the tenant as
//   a constant (the planner judges with the tenant's own statistics) are as before.
// - `dc_search_messages(plan, query)` runs it (EXECUTE … USING, planned per query with the tsquery known, as
//   before), and reads text, session and neighbours of the hits with one static statement whose generic plan the
//   connection keeps (all of it index probes by key); `plan_cache_mode` is forced to generic for the static
//   statements only. STABLE: every statement of one search reads the same snapshot, as the single statement did.
// Same arguments, same result columns and order, same tenant check; only where the planning time goes changes.
import { type Kysely, sql } from 'kysely';
import { SEARCH_FUNCTION, SEARCH_SQL_FUNCTION } from './0005_leakproof_search.js';
import { rewriteSearchVisibility, VISIBLE_BY_COLUMNS, VISIBLE_BY_STATE } from './0008_message_state.js';

/**
 * The statement of one page of hits for `plan` in `tenant` (see 0005 for the plan's fields); NULL when nothing can
 * match. `visible` is 0008's test: hidden = a state row that is neither active nor compacted.
 */
const HITS_SQL_FUNCTION = sql`
  CREATE OR REPLACE FUNCTION dc_search_sql(plan jsonb, tenant text) RETURNS text
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $fn$
  DECLARE
    ordering text := plan ->> 'ordering';
    visible text := CASE WHEN coalesce(plan -> 'includeInactive' = 'true'::jsonb, false) THEN 'true'
                         ELSE 'NOT EXISTS (SELECT 1 FROM public.message_state x WHERE x.tenant_id = %1$s.tenant_id AND x.message_id = %1$s.id AND NOT x.active AND NOT x.compacted)' END;
    lim bigint := least(greatest(coalesce((plan ->> 'limit')::bigint, 20), 1), 100);
    skip bigint := greatest(coalesce((plan ->> 'offset')::bigint, 0), 0);
    probe_rows bigint := coalesce((plan ->> 'probeRows')::bigint, 0);
    wanted bigint := skip + lim;
    well_estimated boolean := true;
    match text;
    rank text := '0::real';
    scope text;
    filters text;
    sources text[];
    recency text;
    hits text;
    grp jsonb;
    clause jsonb;
    clauses text[];
    alternatives text[] := '{}';
  BEGIN
    IF ordering IS NULL OR ordering NOT IN ('rank', 'newest', 'oldest') THEN
      RAISE EXCEPTION 'dc_search_messages: unknown ordering' USING ERRCODE = '22023';
    END IF;

    IF plan ->> 'path' = 'latin' THEN
      match := 'm.search_tsv @@ $1';
      rank := 'ts_rank_cd(m.search_tsv, $1)';
      well_estimated := false;
    ELSIF plan ->> 'path' = 'cjk' AND jsonb_typeof(plan -> 'groups') = 'array' THEN
      FOR grp IN SELECT jsonb_array_elements(plan -> 'groups') LOOP
        clauses := '{}';
        FOR clause IN SELECT jsonb_array_elements(grp) LOOP
          clauses := clauses || public.dc_search_cjk_clause(clause);
          well_estimated := well_estimated AND clause ->> 'kind' = 'gram';
        END LOOP;
        IF cardinality(clauses) > 0 THEN alternatives := alternatives || ('(' || array_to_string(clauses, ' AND ') || ')'); END IF;
      END LOOP;
      IF cardinality(alternatives) = 0 THEN RETURN NULL; END IF;
      match := CASE WHEN cardinality(alternatives) = 1 THEN alternatives[1]
                    ELSE '(' || array_to_string(alternatives, ' OR ') || ')' END;
    ELSE
      RAISE EXCEPTION 'dc_search_messages: unknown path' USING ERRCODE = '22023';
    END IF;

    -- scope: the tenant as a constant (the planner uses the tenant's own statistics) and the option filters.
    scope := format('m.tenant_id = %L', tenant);
    IF jsonb_typeof(plan -> 'roles') = 'array' AND jsonb_array_length(plan -> 'roles') > 0 THEN
      scope := scope || format(' AND m.role = ANY(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'roles')));
    END IF;
    sources := '{}';
    IF jsonb_typeof(plan -> 'sources') = 'array' AND jsonb_array_length(plan -> 'sources') > 0 THEN
      sources := sources || format('s.source = ANY(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'sources')));
    END IF;
    IF jsonb_typeof(plan -> 'excludeSources') = 'array' AND jsonb_array_length(plan -> 'excludeSources') > 0 THEN
      sources := sources || format('s.source <> ALL(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'excludeSources')));
    END IF;
    IF cardinality(sources) > 0 THEN
      scope := scope || format(' AND EXISTS (SELECT 1 FROM public.sessions s WHERE s.tenant_id = m.tenant_id AND s.id = m.session_id AND %s)',
                                   array_to_string(sources, ' AND '));
    END IF;
    filters := scope || ' AND ' || format(visible, 'm');

    recency := CASE WHEN ordering = 'oldest' THEN '%1$s."timestamp" ASC, %1$s.id ASC' ELSE '%1$s."timestamp" DESC, %1$s.id DESC' END;
    hits := format($q$
      SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, %s AS rank
        FROM public.messages m
       WHERE %s AND %s
       ORDER BY %s
       LIMIT %s$q$,
      rank, match, filters, CASE WHEN ordering = 'rank' THEN 'rank DESC, ' ELSE '' END || format(recency, 'm'), wanted);
    -- The recency probe (0005): the newest (oldest) probe_rows rows of the tenant in the options' scope first; when
    -- enough of them match and are visible they are the answer (common terms in large tenants), and when the tenant
    -- has fewer rows than that the probe saw all of them; otherwise the whole search runs (indexes for rare terms).
    -- Both give the same rows: a visible match newer (older) than the last one the probe kept lies in its window.
    -- Visibility is tested on the matches only, not on every row of the window.
    IF ordering <> 'rank' AND NOT well_estimated AND probe_rows > 0 AND wanted <= 100 THEN
      hits := format($q$
        WITH win AS MATERIALIZED (
          SELECT m.tenant_id, m.id, m.session_id, m.role, m."timestamp", m.tool_name, %4$s AS hit
            FROM public.messages m WHERE %1$s ORDER BY %2$s LIMIT %3$s),
        probe AS MATERIALIZED (
          SELECT w.id, w.session_id, w.role, w."timestamp", w.tool_name, 0::real AS rank
            FROM win w WHERE w.hit AND %7$s ORDER BY %8$s LIMIT %5$s),
        settled AS MATERIALIZED (
          SELECT (SELECT count(*) FROM probe) >= %5$s OR (SELECT count(*) FROM win) < %3$s AS done)
        SELECT * FROM probe WHERE (SELECT done FROM settled)
        UNION ALL
        SELECT * FROM (%6$s) AS f WHERE NOT (SELECT done FROM settled)$q$,
        scope, format(recency, 'm'), probe_rows, match, wanted, hits, format(visible, 'w'), format(recency, 'w'));
    END IF;
    RETURN format($q$
      SELECT h.id, h.session_id, h.role, h."timestamp", h.tool_name
        FROM (%1$s) AS h ORDER BY %2$s OFFSET %3$s LIMIT %4$s$q$,
      hits, CASE WHEN ordering = 'rank' THEN 'h.rank DESC, ' ELSE '' END || format(recency, 'h'), skip, lim);
  END
  $fn$`;

/**
 * The search of the transaction's tenant (app.tenant_id, the setting row-level security uses), read as the owner:
 * the page of hits of dc_search_sql, then per hit its text, session fields and visible neighbours (the previous and
 * next rows of its session in `(timestamp, id)` order), in the page's order.
 */
const PAGE_FUNCTION = sql`
  CREATE OR REPLACE FUNCTION dc_search_messages(plan jsonb, query tsquery)
  RETURNS TABLE (id bigint, session_id text, role text, "timestamp" timestamptz, tool_name text, indexed_text text,
                 source text, model text, started_at timestamptz, prev_role text, prev_content text, next_role text,
                 next_content text)
  LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $fn$
  #variable_conflict use_column
  DECLARE
    tenant text := nullif(current_setting('app.tenant_id', true), '');
    every_row boolean := coalesce(plan -> 'includeInactive' = 'true'::jsonb, false);
    lim bigint;
    skip bigint;
    previous_mode text;
    static_hits boolean;
    statement text;
    hit record;
    ids bigint[] := '{}';
    sessions text[] := '{}';
    roles text[] := '{}';
    stamps timestamptz[] := '{}';
    tools text[] := '{}';
  BEGIN
    IF tenant IS NULL OR plan ->> 'tenant' IS DISTINCT FROM tenant THEN
      RAISE EXCEPTION 'dc_search_messages: the plan''s tenant must be the transaction''s app.tenant_id'
        USING ERRCODE = '42501';
    END IF;
    IF plan ->> 'path' = 'latin' AND query IS NULL THEN RETURN; END IF;
    lim := least(greatest(coalesce((plan ->> 'limit')::bigint, 20), 1), 100);
    skip := greatest(coalesce((plan ->> 'offset')::bigint, 0), 0);
    static_hits := plan ->> 'path' = 'latin' AND plan ->> 'ordering' = 'rank'
                   AND coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'roles') = 'array' THEN plan -> 'roles' END), 0) = 0
                   AND coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'sources') = 'array' THEN plan -> 'sources' END), 0) = 0
                   AND coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'excludeSources') = 'array' THEN plan -> 'excludeSources' END), 0) = 0;
    IF NOT static_hits THEN
      statement := public.dc_search_sql(plan, tenant);
      IF statement IS NULL THEN RETURN; END IF;
    END IF;
    -- Ranking reads every match: in a large tenant a common word costs enough for JIT compilation to start, which
    -- adds tens of milliseconds to a query that returns 20 rows. The rest of this transaction only.
    IF plan ->> 'ordering' = 'rank' THEN PERFORM set_config('jit', 'off', true); END IF;
    IF NOT static_hits THEN
      -- Planned for this query, the tsquery known (a new plan per call: always a custom one).
      FOR hit IN EXECUTE statement USING query LOOP
        ids := ids || hit.id;
        sessions := sessions || hit.session_id;
        roles := roles || hit.role;
        stamps := stamps || hit."timestamp";
        tools := tools || hit.tool_name;
      END LOOP;
    END IF;
    -- The static statements keep one generic plan for the connection: a custom plan would know the arrays'
    -- length, so always look cheaper, and be planned again on every call (2.6 ms). For these statements only.
    previous_mode := current_setting('plan_cache_mode');
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    IF static_hits THEN
      -- The common Latin search (by rank, no role or source filter): static, so its plan is kept too. Ranking reads
      -- every match of the tenant through the (tenant_id, search_tsv) index whatever the term, the one plan there is.
      FOR hit IN
        SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name
          FROM public.messages m
         WHERE m.tenant_id = tenant AND m.search_tsv @@ query
           AND (every_row OR NOT EXISTS (
                 SELECT 1 FROM public.message_state x
                  WHERE x.tenant_id = m.tenant_id AND x.message_id = m.id AND NOT x.active AND NOT x.compacted))
         ORDER BY ts_rank_cd(m.search_tsv, query) DESC, m."timestamp" DESC, m.id DESC
        OFFSET skip LIMIT lim
      LOOP
        ids := ids || hit.id;
        sessions := sessions || hit.session_id;
        roles := roles || hit.role;
        stamps := stamps || hit."timestamp";
        tools := tools || hit.tool_name;
      END LOOP;
    END IF;
    IF cardinality(ids) > 0 THEN
      RETURN QUERY
        SELECT h.id, h.session_id, h.role, h.stamp, h.tool_name, t.indexed_text, s.source, s.model, s.started_at,
               prev.role, prev.content, nxt.role, nxt.content
          FROM unnest(ids, sessions, roles, stamps, tools) WITH ORDINALITY AS h (id, session_id, role, stamp, tool_name, ord)
          -- LIMIT 1 keeps each lookup a per-hit index probe (the planner cannot flatten it into a join over the tenant).
          CROSS JOIN LATERAL (
            SELECT t.indexed_text FROM public.messages t WHERE t.tenant_id = tenant AND t.id = h.id LIMIT 1) AS t
          CROSS JOIN LATERAL (
            SELECT s.source, s.model, s.started_at FROM public.sessions s
             WHERE s.tenant_id = tenant AND s.id = h.session_id LIMIT 1) AS s
          LEFT JOIN LATERAL (
            SELECT p.role, left(CASE WHEN p.content_parts IS NULL THEN coalesce(p.content, '')
                                     ELSE public.dc_parts_text(p.content_parts) END, 200) AS content
              FROM public.messages p
             WHERE p.tenant_id = tenant AND p.session_id = h.session_id AND (p."timestamp", p.id) < (h.stamp, h.id)
               AND (every_row OR NOT EXISTS (
                     SELECT 1 FROM public.message_state x
                      WHERE x.tenant_id = p.tenant_id AND x.message_id = p.id AND NOT x.active AND NOT x.compacted))
             ORDER BY p."timestamp" DESC, p.id DESC
             LIMIT 1) AS prev ON true
          LEFT JOIN LATERAL (
            SELECT n.role, left(CASE WHEN n.content_parts IS NULL THEN coalesce(n.content, '')
                                     ELSE public.dc_parts_text(n.content_parts) END, 200) AS content
              FROM public.messages n
             WHERE n.tenant_id = tenant AND n.session_id = h.session_id AND (n."timestamp", n.id) > (h.stamp, h.id)
               AND (every_row OR NOT EXISTS (
                     SELECT 1 FROM public.message_state x
                      WHERE x.tenant_id = n.tenant_id AND x.message_id = n.id AND NOT x.active AND NOT x.compacted))
             ORDER BY n."timestamp", n.id
             LIMIT 1) AS nxt ON true
         ORDER BY h.ord;
    END IF;
    PERFORM set_config('plan_cache_mode', previous_mode, true);
  END
  $fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // CREATE OR REPLACE keeps the grants of 0005 (the tenant role may execute dc_search_messages, PUBLIC may not).
  await HITS_SQL_FUNCTION.execute(db);
  await PAGE_FUNCTION.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // Back to the definitions of 0005 with the visibility of 0008.
  await sql`DROP FUNCTION dc_search_messages(jsonb, tsquery)`.execute(db);
  await sql`DROP FUNCTION dc_search_sql(jsonb, text)`.execute(db);
  await SEARCH_SQL_FUNCTION.execute(db);
  await SEARCH_FUNCTION.execute(db);
  await sql`REVOKE ALL ON FUNCTION dc_search_messages(jsonb, tsquery) FROM PUBLIC`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION dc_search_messages(jsonb, tsquery) TO dc_tenant`.execute(db);
  await rewriteSearchVisibility(db, VISIBLE_BY_COLUMNS, VISIBLE_BY_STATE);
}
