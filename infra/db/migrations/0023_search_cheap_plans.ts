// 0023: search statements that are cheap to plan, visibility checked after the match (issue #11 §6, SPEC §14,
// DESIGN.md §4). Never edit a migration that has landed; add a new one.
//
// At 100k messages a CJK search that found nothing took ~0.4 ms in PostgreSQL, 0.05 ms of it running the query: the
// rest was building its statement and planning it. Planning the visibility test (an anti-join with the partial index
// of hidden rows) took 0.18 of the 0.25 ms, and the recency probe's three CTEs and the outer paging wrapper doubled it
// for terms longer than two characters, whose probe then read its whole 400-row window.
// - `dc_search_statements(plan, tenant)` builds the search as plain statements: `matches` (the first `fetch` matches
//   of the tenant's scope in order, visible or not) and, where 0010 probed, `probe` (the newest/oldest `probeRows`
//   rows of the scope numbered: the matching ones, and the rows numbered 50 and `probeRows`). Matching, option
//   filters, ordering and the tenant as a constant are 0010's. `dc_search_sql(plan, tenant)` stays the statement of
//   the matches (tests EXPLAIN it).
// - `dc_search_messages(plan, query)` (0023/pageFunction.ts): the common search, one CJK term newest first without a
//   filter, runs static statements (planned once per connection) or, for a 1–2-character term, one fixed statement
//   text planned for its values; other searches run the built statements, the probe first where there is one. A
//   probe is read a row at a time and gives up early when its matches cannot fill the page. Hidden rows (SPEC §14.1)
//   are looked up among the matches afterwards; when they leave too few, the matches are fetched again with twice as
//   many more as were hidden. Paging, the Latin search by rank and the lookups of text, session and neighbours are
//   0010's static statements.
// Same arguments, result columns, order and tenant check as 0010; down() restores 0010's functions.
import { type Kysely, sql } from 'kysely';
import { up as up0010 } from './0010_search_plan_reuse.js';
import { PAGE_FUNCTION } from './0023/pageFunction.js';

const STATEMENTS_FUNCTION = sql`
  CREATE FUNCTION dc_search_statements(plan jsonb, tenant text, OUT matches text, OUT probe text)
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $fn$
  DECLARE
    ordering text := plan ->> 'ordering';
    lim bigint := least(greatest(coalesce((plan ->> 'limit')::bigint, 20), 1), 100);
    skip bigint := greatest(coalesce((plan ->> 'offset')::bigint, 0), 0);
    wanted bigint := greatest(coalesce((plan ->> 'fetch')::bigint, lim + skip), 1);
    probe_rows bigint := coalesce((plan ->> 'probeRows')::bigint, 0);
    well_estimated boolean := true;
    match text;
    rank text := '0::real';
    scope text;
    sources text[] := '{}';
    recency text;
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
      IF cardinality(alternatives) = 0 THEN RETURN; END IF;
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

    recency := CASE WHEN ordering = 'oldest' THEN 'm."timestamp" ASC, m.id ASC' ELSE 'm."timestamp" DESC, m.id DESC' END;
    matches := format($q$
      SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name
        FROM public.messages m
       WHERE %s AND %s
       ORDER BY %s
       LIMIT %s$q$,
      match, scope, CASE WHEN ordering = 'rank' THEN rank || ' DESC, ' ELSE '' END || recency, wanted);
    -- The recency probe (0005, 0010), for recency-ordered searches whose frequency the planner cannot judge: the
    -- newest (oldest) probe_rows rows of the scope, numbered; the matching ones in order, and the rows that end its
    -- first 50 (first_end) and the whole window (window_end) whether they match or not.
    IF ordering <> 'rank' AND NOT well_estimated AND probe_rows > 0 AND wanted <= 100 THEN
      probe := format($q$
        SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, %1$s AS hit, m.rn = %5$s AS first_end,
               m.rn = %4$s AS window_end
          FROM (SELECT m.tenant_id, m.id, m.session_id, m.role, m."timestamp", m.tool_name, m.indexed_text, m.search_tsv,
                       m.cjk_grams, row_number() OVER (ORDER BY %2$s) AS rn
                  FROM public.messages m WHERE %3$s ORDER BY %2$s LIMIT %4$s) AS m
         WHERE %1$s OR m.rn = %5$s OR m.rn = %4$s
         ORDER BY %2$s$q$,
        match, recency, scope, probe_rows, least(probe_rows, 50));
    END IF;
  END
  $fn$`;

/** 0010's name and return type, now the matches statement of dc_search_statements. */
const MATCHES_SQL_FUNCTION = sql`
  CREATE OR REPLACE FUNCTION dc_search_sql(plan jsonb, tenant text) RETURNS text
  LANGUAGE sql STABLE SET search_path = pg_catalog, public, pg_temp AS $fn$
    SELECT (public.dc_search_statements(plan, tenant)).matches
  $fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // Reads nothing, like dc_search_sql (0005), which calls it.
  await STATEMENTS_FUNCTION.execute(db);
  await MATCHES_SQL_FUNCTION.execute(db);
  // CREATE OR REPLACE keeps the grants of 0005 (the tenant role may execute dc_search_messages, PUBLIC may not).
  await PAGE_FUNCTION.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // 0010's definitions (CREATE OR REPLACE, grants kept), then the builder they no longer call.
  await up0010(db);
  await sql`DROP FUNCTION dc_search_statements(jsonb, text)`.execute(db);
}
