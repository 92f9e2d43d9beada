// 0005: tenant isolation inside PostgreSQL (issue #9 §8; DESIGN.md §4, SPEC §13.1, §14). Never edit a migration that
// has landed; add a new one.
//
// - Search runs in `dc_search_messages(plan, query)`, a SECURITY DEFINER function owned by the owner: it reads the
//   tables as the owner (no row-level security, so the trigram, tsvector and CJK gram indexes stay usable for ILIKE,
//   @@ and @>) and applies the tenant of the transaction (`app.tenant_id`, the setting RLS uses) to every row it
//   reads. The caller passes the search plan as data (no SQL); user text enters the dynamic SQL only as literals
//   (format %L) or parameters. No expression of the caller is ever evaluated on another tenant's row, so no error
//   message can quote one. The view `tenant_messages` (not a security barrier: a caller's erroring predicate could
//   run on other tenants' rows) is dropped. A security-barrier view is no alternative: it keeps the caller's
//   non-leakproof predicates above the tenant predicate, so they cannot become index conditions either.
// - `tenants`: row-level security, so the tenant role reads its own row only (the owner reads policies outside RLS).
// - `compaction_totals`: compaction counts and tokens saved per tenant, trigger and status, kept by a trigger on
//   `compactions`, so a `/metrics` scrape reads a few rows instead of every tenant's compactions
//   (infra/metrics/registry.ts). Owner-only, like api_keys.
import { type Kysely, sql } from 'kysely';

/**
 * The SQL of one CJK-path clause on the row `m` (SPEC §14.6; infra/db/search/planner.ts builds the clauses):
 * - `gram`: a 1–2-character CJK term, exactly "its gram is in cjk_grams";
 * - `strpos`: a term without cased characters, plain substring search (ILIKE and strpos agree there);
 * - `ilike`: `indexed_text ILIKE '%term%' ESCAPE '\'`, the term escaped here.
 * A positive non-gram clause with grams is prefiltered by them (the gram index), then rechecked on the text.
 */
const CJK_CLAUSE_FUNCTION = String.raw`
  CREATE FUNCTION dc_search_cjk_clause(clause jsonb) RETURNS text
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $fn$
  DECLARE
    kind text := clause ->> 'kind';
    term text := coalesce(clause ->> 'text', '');
    negated boolean := coalesce(clause -> 'negated' = 'true'::jsonb, false);
    grams text[] := CASE WHEN jsonb_typeof(clause -> 'grams') = 'array'
                         THEN ARRAY(SELECT jsonb_array_elements_text(clause -> 'grams')) ELSE '{}' END;
    expr text;
  BEGIN
    IF kind = 'gram' THEN
      expr := format('m.cjk_grams @> ARRAY[%L]::text[]', term);
    ELSIF kind = 'strpos' THEN
      expr := format('strpos(m.indexed_text, %L) <> 0', term);
    ELSIF kind = 'ilike' THEN
      expr := format('m.indexed_text ILIKE %L ESCAPE %L',
                     '%' || replace(replace(replace(term, '\', '\\'), '%', '\%'), '_', '\_') || '%', '\');
    ELSE
      RAISE EXCEPTION 'dc_search_messages: unknown clause kind' USING ERRCODE = '22023';
    END IF;
    IF negated THEN RETURN format('NOT (%s)', expr); END IF;
    IF kind <> 'gram' AND cardinality(grams) > 0 THEN
      RETURN format('(m.cjk_grams @> %L::text[] AND %s)', grams, expr);
    END IF;
    RETURN expr;
  END
  $fn$`;

/**
 * The search statement (SPEC §14) for `plan` in `tenant`: the page of hits in order, each with its text, session
 * fields and visible neighbours; `$1` is the Latin path's tsquery. NULL when nothing can match. Reads nothing, so it
 * may be public: tests EXPLAIN exactly what dc_search_messages runs.
 * `plan` (built by infra/db/search/planner.ts): path (`latin` | `cjk`), groups (CJK: an OR of AND-groups of clauses),
 * ordering (`rank` | `newest` | `oldest`), roles, sources, excludeSources, includeInactive, limit, offset, probeRows.
 * Query shapes as before this migration: the recency probe for recency-ordered searches whose frequency the planner
 * cannot judge, LIMIT 1 lateral lookups of text, session and neighbours.
 */
export const SEARCH_SQL_FUNCTION = sql`
  CREATE FUNCTION dc_search_sql(plan jsonb, tenant text) RETURNS text
  LANGUAGE plpgsql STABLE SET search_path = pg_catalog, public, pg_temp AS $fn$
  DECLARE
    ordering text := plan ->> 'ordering';
    visible text := CASE WHEN coalesce(plan -> 'includeInactive' = 'true'::jsonb, false) THEN 'true'
                         ELSE '(%1$s.active OR %1$s.compacted)' END;
    lim bigint := least(greatest(coalesce((plan ->> 'limit')::bigint, 20), 1), 100);
    skip bigint := greatest(coalesce((plan ->> 'offset')::bigint, 0), 0);
    probe_rows bigint := coalesce((plan ->> 'probeRows')::bigint, 0);
    wanted bigint := skip + lim;
    well_estimated boolean := true;
    match text;
    rank text := '0::real';
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

    -- The tenant as a constant (the planner uses the tenant's own statistics), visibility, the option filters.
    filters := format('m.tenant_id = %L AND %s', tenant, format(visible, 'm'));
    IF jsonb_typeof(plan -> 'roles') = 'array' AND jsonb_array_length(plan -> 'roles') > 0 THEN
      filters := filters || format(' AND m.role = ANY(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'roles')));
    END IF;
    sources := '{}';
    IF jsonb_typeof(plan -> 'sources') = 'array' AND jsonb_array_length(plan -> 'sources') > 0 THEN
      sources := sources || format('s.source = ANY(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'sources')));
    END IF;
    IF jsonb_typeof(plan -> 'excludeSources') = 'array' AND jsonb_array_length(plan -> 'excludeSources') > 0 THEN
      sources := sources || format('s.source <> ALL(%L::text[])', ARRAY(SELECT jsonb_array_elements_text(plan -> 'excludeSources')));
    END IF;
    IF cardinality(sources) > 0 THEN
      filters := filters || format(' AND EXISTS (SELECT 1 FROM public.sessions s WHERE s.tenant_id = m.tenant_id AND s.id = m.session_id AND %s)',
                                   array_to_string(sources, ' AND '));
    END IF;

    recency := CASE WHEN ordering = 'oldest' THEN '%1$s."timestamp" ASC, %1$s.id ASC' ELSE '%1$s."timestamp" DESC, %1$s.id DESC' END;
    hits := format($q$
      SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, %s AS rank
        FROM public.messages m
       WHERE %s AND %s
       ORDER BY %s
       LIMIT %s$q$,
      rank, match, filters, CASE WHEN ordering = 'rank' THEN 'rank DESC, ' ELSE '' END || format(recency, 'm'), wanted);
    -- Recency order: first only the newest (oldest) probe_rows visible rows, in index order; when enough of them match,
    -- they are the answer, found without touching older rows (common terms in large tenants). Otherwise the whole
    -- search runs (indexes for rare terms). Both give the same rows; the probe only decides how fast. Skipped when the
    -- planner can judge the frequency itself (only 1–2-character CJK terms: cjk_grams' element statistics).
    IF ordering <> 'rank' AND NOT well_estimated AND probe_rows > 0 AND wanted <= 100 THEN
      hits := format($q$
        WITH probe AS MATERIALIZED (
          SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, 0::real AS rank
            FROM (SELECT * FROM public.messages m WHERE %1$s ORDER BY %2$s LIMIT %3$s) AS m
           WHERE %4$s
           ORDER BY %2$s
           LIMIT %5$s)
        SELECT * FROM probe WHERE (SELECT count(*) FROM probe) >= %5$s
        UNION ALL
        SELECT * FROM (%6$s) AS f WHERE (SELECT count(*) FROM probe) < %5$s$q$,
        filters, format(recency, 'm'), probe_rows, match, wanted, hits);
    END IF;
    RETURN format($q$
      WITH hits AS MATERIALIZED (
        SELECT * FROM (%1$s) AS h ORDER BY %2$s OFFSET %3$s LIMIT %4$s)
      SELECT h.id, h.session_id, h.role, h."timestamp", h.tool_name, t.indexed_text, s.source, s.model, s.started_at,
             prev.role, prev.content, nxt.role, nxt.content
        FROM hits h
        -- LIMIT 1 keeps each lookup a per-hit index probe (the planner cannot flatten it into a join over the tenant).
        CROSS JOIN LATERAL (
          SELECT t.indexed_text FROM public.messages t WHERE t.tenant_id = %5$L AND t.id = h.id LIMIT 1) AS t
        CROSS JOIN LATERAL (
          SELECT s.source, s.model, s.started_at FROM public.sessions s
           WHERE s.tenant_id = %5$L AND s.id = h.session_id LIMIT 1) AS s
        LEFT JOIN LATERAL (
          SELECT p.role, left(CASE WHEN p.content_parts IS NULL THEN coalesce(p.content, '')
                                   ELSE public.dc_parts_text(p.content_parts) END, 200) AS content
            FROM public.messages p
           WHERE p.tenant_id = %5$L AND p.session_id = h.session_id AND (p."timestamp", p.id) < (h."timestamp", h.id)
             AND %6$s
           ORDER BY p."timestamp" DESC, p.id DESC
           LIMIT 1) AS prev ON true
        LEFT JOIN LATERAL (
          SELECT n.role, left(CASE WHEN n.content_parts IS NULL THEN coalesce(n.content, '')
                                   ELSE public.dc_parts_text(n.content_parts) END, 200) AS content
            FROM public.messages n
           WHERE n.tenant_id = %5$L AND n.session_id = h.session_id AND (n."timestamp", n.id) > (h."timestamp", h.id)
             AND %7$s
           ORDER BY n."timestamp", n.id
           LIMIT 1) AS nxt ON true
       ORDER BY %2$s$q$,
      hits, CASE WHEN ordering = 'rank' THEN 'h.rank DESC, ' ELSE '' END || format(recency, 'h'), skip, lim, tenant,
      format(visible, 'p'), format(visible, 'n'));
  END
  $fn$`;

/**
 * The search of the transaction's tenant (app.tenant_id, the setting row-level security uses): the rows of
 * dc_search_sql, read as the owner. `plan` must name the same tenant (a caller's mistake is refused, not served).
 * `query`: the Latin path's tsquery, built by PostgreSQL functions in the caller's statement.
 */
export const SEARCH_FUNCTION = sql`
  CREATE FUNCTION dc_search_messages(plan jsonb, query tsquery)
  RETURNS TABLE (id bigint, session_id text, role text, "timestamp" timestamptz, tool_name text, indexed_text text,
                 source text, model text, started_at timestamptz, prev_role text, prev_content text, next_role text,
                 next_content text)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $fn$
  DECLARE
    tenant text := nullif(current_setting('app.tenant_id', true), '');
    statement text;
  BEGIN
    IF tenant IS NULL OR plan ->> 'tenant' IS DISTINCT FROM tenant THEN
      RAISE EXCEPTION 'dc_search_messages: the plan''s tenant must be the transaction''s app.tenant_id'
        USING ERRCODE = '42501';
    END IF;
    IF plan ->> 'path' = 'latin' AND query IS NULL THEN RETURN; END IF;
    statement := public.dc_search_sql(plan, tenant);
    IF statement IS NULL THEN RETURN; END IF;
    -- Ranking reads every match: in a large tenant a common word costs enough for JIT compilation to start, which
    -- adds tens of milliseconds to a query that returns 20 rows. The rest of this transaction only.
    IF plan ->> 'ordering' = 'rank' THEN PERFORM set_config('jit', 'off', true); END IF;
    RETURN QUERY EXECUTE statement USING query;
  END
  $fn$`;

/** A compaction's tokens saved (tokensBefore - tokensAfter of its stats; 0 when either is missing). */
const TOKENS_SAVED_FUNCTION = sql`
  CREATE FUNCTION dc_compaction_tokens_saved(stats jsonb) RETURNS numeric
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(stats -> 'tokensBefore') = 'number' AND jsonb_typeof(stats -> 'tokensAfter') = 'number'
                THEN (stats ->> 'tokensBefore')::numeric - (stats ->> 'tokensAfter')::numeric ELSE 0 END
  $$`;

/**
 * Moves a changed compaction's contribution from its old (tenant, trigger, status) bucket to its new one. Both rows
 * are upserted by one statement in key order, so two transactions never lock them in opposite orders. SECURITY
 * DEFINER: the tenant role writes compactions but may not touch the totals.
 */
const COUNT_FUNCTION = sql`
  CREATE FUNCTION dc_count_compaction() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp AS $fn$
  BEGIN
    INSERT INTO public.compaction_totals AS t (tenant_id, "trigger", status, compactions, tokens_saved)
    SELECT d.tenant_id, d."trigger", d.status, sum(d.n), sum(d.saved)
      FROM (SELECT OLD.tenant_id, OLD."trigger", OLD.status, -1, -public.dc_compaction_tokens_saved(OLD.stats)
             WHERE TG_OP IN ('UPDATE', 'DELETE')
            UNION ALL
            SELECT NEW.tenant_id, NEW."trigger", NEW.status, 1, public.dc_compaction_tokens_saved(NEW.stats)
             WHERE TG_OP IN ('INSERT', 'UPDATE')) AS d (tenant_id, "trigger", status, n, saved)
     GROUP BY 1, 2, 3
    HAVING sum(d.n) <> 0 OR sum(d.saved) <> 0
     ORDER BY 1, 2, 3
    ON CONFLICT (tenant_id, "trigger", status) DO UPDATE
       SET compactions = t.compactions + excluded.compactions, tokens_saved = t.tokens_saved + excluded.tokens_saved;
    RETURN NULL;
  END
  $fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  // A: the search function replaces the view.
  await sql.raw(CJK_CLAUSE_FUNCTION).execute(db);
  await SEARCH_SQL_FUNCTION.execute(db);
  await SEARCH_FUNCTION.execute(db);
  // Functions are executable by PUBLIC by default: only the tenant role (and the owner) may search.
  await sql`REVOKE ALL ON FUNCTION dc_search_messages(jsonb, tsquery) FROM PUBLIC`.execute(db);
  await sql`GRANT EXECUTE ON FUNCTION dc_search_messages(jsonb, tsquery) TO dc_tenant`.execute(db);
  await sql`DROP VIEW tenant_messages`.execute(db);

  // B: the tenant role sees its own tenant row only.
  await sql`ALTER TABLE tenants ENABLE ROW LEVEL SECURITY`.execute(db);
  await sql`CREATE POLICY tenant_self ON tenants FOR SELECT USING (id = current_setting('app.tenant_id', true))`.execute(
    db,
  );

  // D: totals for /metrics. Creating the trigger locks out concurrent writers of compactions until this migration
  // commits, so the totals counted below start exactly where the trigger takes over.
  await sql`
    CREATE TABLE compaction_totals (
      tenant_id text NOT NULL,
      "trigger" text NOT NULL,
      status text NOT NULL,
      compactions bigint NOT NULL DEFAULT 0,
      tokens_saved numeric NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, "trigger", status)
    )`.execute(db);
  await TOKENS_SAVED_FUNCTION.execute(db);
  await COUNT_FUNCTION.execute(db);
  await sql`REVOKE ALL ON FUNCTION dc_count_compaction() FROM PUBLIC`.execute(db);
  await sql`
    CREATE TRIGGER compaction_totals_insert_delete AFTER INSERT OR DELETE ON compactions
      FOR EACH ROW EXECUTE FUNCTION dc_count_compaction()`.execute(db);
  // Phase results and attempts change often; only a change of what is counted touches the totals.
  await sql`
    CREATE TRIGGER compaction_totals_update AFTER UPDATE ON compactions
      FOR EACH ROW WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD."trigger" IS DISTINCT FROM NEW."trigger"
                         OR OLD.status IS DISTINCT FROM NEW.status OR OLD.stats IS DISTINCT FROM NEW.stats)
      EXECUTE FUNCTION dc_count_compaction()`.execute(db);
  await sql`
    INSERT INTO compaction_totals (tenant_id, "trigger", status, compactions, tokens_saved)
    SELECT tenant_id, "trigger", status, count(*), sum(dc_compaction_tokens_saved(stats))
      FROM compactions GROUP BY 1, 2, 3`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS compaction_totals_update ON compactions`.execute(db);
  await sql`DROP TRIGGER IF EXISTS compaction_totals_insert_delete ON compactions`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_count_compaction()`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_compaction_tokens_saved(jsonb)`.execute(db);
  await sql`DROP TABLE IF EXISTS compaction_totals`.execute(db);
  await sql`DROP POLICY IF EXISTS tenant_self ON tenants`.execute(db);
  await sql`ALTER TABLE tenants DISABLE ROW LEVEL SECURITY`.execute(db);
  await sql`
    CREATE VIEW tenant_messages AS
      SELECT * FROM messages WHERE tenant_id = current_setting('app.tenant_id', true)`.execute(db);
  await sql`GRANT SELECT ON tenant_messages TO dc_tenant`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_search_messages(jsonb, tsquery)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_search_sql(jsonb, text)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_search_cjk_clause(jsonb)`.execute(db);
}
