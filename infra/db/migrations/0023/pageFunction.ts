// Part of migration 0023 (../0023_search_cheap_plans.ts), kept apart for length: the search function itself. Never
// edit it once landed; a later migration replaces the function instead.
import { sql } from 'kysely';

/**
 * The search of the transaction's tenant (app.tenant_id), read as the owner: the page of visible matches, then per
 * hit its text, session fields and visible neighbours, in the page's order (0010's lookups).
 */
export const PAGE_FUNCTION = sql`
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
    wanted bigint;
    fetch_rows bigint;
    page_skip bigint;
    previous_mode text;
    static_hits boolean;
    filtered boolean;
    statements record;
    statement text;
    settled boolean := false;
    full_window boolean := false;
    rare boolean := false;
    single boolean;
    strategy text;
    clause jsonb;
    term text;
    grams text[];
    pattern text;
    probe_rows bigint := coalesce((plan ->> 'probeRows')::bigint, 0);
    probe_cursor refcursor;
    -- The newest c_window rows of the tenant, numbered: the matches of one CJK clause, and the rows numbered 50,
    -- c_checkpoint and c_window whether they match or not. Static: one generic plan per connection (the recency
    -- index, whatever the term).
    recent_rows CURSOR (c_tenant text, c_grams text[], c_kind text, c_term text, c_pattern text, c_checkpoint bigint,
                        c_window bigint) FOR
      SELECT w.id, w.session_id, w.role, w."timestamp", w.tool_name, w.hit, w.rn
        FROM (SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, m.rn,
                     m.cjk_grams @> c_grams
                     AND CASE c_kind WHEN 'strpos' THEN strpos(m.indexed_text, c_term) <> 0
                                     WHEN 'ilike' THEN m.indexed_text ILIKE c_pattern ESCAPE '\\'
                                     ELSE true END AS hit
                FROM (SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name, m.indexed_text, m.cjk_grams,
                             row_number() OVER (ORDER BY m."timestamp" DESC, m.id DESC) AS rn
                        FROM public.messages m WHERE m.tenant_id = c_tenant
                       ORDER BY m."timestamp" DESC, m.id DESC LIMIT c_window) AS m) AS w
       WHERE w.hit OR w.rn IN (50, c_checkpoint, c_window)
       ORDER BY w."timestamp" DESC, w.id DESC;
    hit record;
    ids bigint[] := '{}';
    sessions text[] := '{}';
    roles text[] := '{}';
    stamps timestamptz[] := '{}';
    tools text[] := '{}';
    hidden bigint[] := '{}';
  BEGIN
    IF tenant IS NULL OR plan ->> 'tenant' IS DISTINCT FROM tenant THEN
      RAISE EXCEPTION 'dc_search_messages: the plan''s tenant must be the transaction''s app.tenant_id'
        USING ERRCODE = '42501';
    END IF;
    IF plan ->> 'path' = 'latin' AND query IS NULL THEN RETURN; END IF;
    lim := least(greatest(coalesce((plan ->> 'limit')::bigint, 20), 1), 100);
    skip := greatest(coalesce((plan ->> 'offset')::bigint, 0), 0);
    wanted := skip + lim;
    filtered := coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'roles') = 'array' THEN plan -> 'roles' END), 0) > 0
                OR coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'sources') = 'array' THEN plan -> 'sources' END), 0) > 0
                OR coalesce(jsonb_array_length(CASE WHEN jsonb_typeof(plan -> 'excludeSources') = 'array' THEN plan -> 'excludeSources' END), 0) > 0;
    static_hits := plan ->> 'path' = 'latin' AND plan ->> 'ordering' = 'rank' AND NOT filtered;
    -- Two more matches than the page needs, so that a hidden row or two among them costs no second search. Only
    -- two: the planner weighs the recency index against the gram index by this LIMIT, and picks it for the page.
    fetch_rows := CASE WHEN every_row THEN wanted ELSE wanted + 2 END;
    single := NOT static_hits AND plan ->> 'path' = 'cjk' AND plan ->> 'ordering' = 'newest' AND probe_rows > 0
              AND wanted <= 100 AND NOT filtered AND jsonb_typeof(plan -> 'groups') = 'array'
              AND jsonb_array_length(plan -> 'groups') = 1 AND jsonb_typeof(plan -> 'groups' -> 0) = 'array'
              AND jsonb_array_length(plan -> 'groups' -> 0) = 1
              AND plan #>> '{groups,0,0,kind}' IN ('gram', 'strpos', 'ilike')
              AND plan #> '{groups,0,0,negated}' IS DISTINCT FROM 'true'::jsonb
              AND (plan #>> '{groups,0,0,kind}' = 'gram'
                   OR (jsonb_typeof(plan #> '{groups,0,0,grams}') = 'array'
                       AND jsonb_array_length(plan #> '{groups,0,0,grams}') > 0));
    IF NOT static_hits AND NOT single THEN
      SELECT * INTO statements FROM public.dc_search_statements(plan || jsonb_build_object('fetch', fetch_rows), tenant);
      IF statements.matches IS NULL THEN RETURN; END IF;
    END IF;
    -- Ranking reads every match: in a large tenant a common word costs enough for JIT compilation to start, which
    -- adds tens of milliseconds to a query that returns 20 rows. The rest of this transaction only.
    IF plan ->> 'ordering' = 'rank' THEN PERFORM set_config('jit', 'off', true); END IF;
    -- The static statements keep one generic plan for the connection (a custom plan would be planned again on every
    -- call); the statements built for the query (EXECUTE) are planned for it each time whatever this says.
    previous_mode := current_setting('plan_cache_mode');
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    IF static_hits THEN
      -- The common Latin search (by rank, no role or source filter): static, visibility and paging included.
      page_skip := 0;
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
    ELSE
      page_skip := skip;
      IF single THEN
        -- One CJK term, newest first, no filter (the common search): static statements, planned once per
        -- connection. First the tenant's newest rows, up to twice probe_rows, read a row at a time: they are the
        -- answer once they hold fetch_rows matches, or when they are all the tenant's rows. No match among the first
        -- 50 → the gram index (a rare term); at row probe_rows, when reading on would cost more than the index →
        -- the gram index if no match yet, else the statement planned for the term (the planner multiplies the
        -- grams' frequencies as if independent, so it is asked as late as possible).
        clause := plan #> '{groups,0,0}';
        term := clause ->> 'text';
        grams := CASE WHEN clause ->> 'kind' = 'gram' THEN ARRAY[term]
                      ELSE ARRAY(SELECT jsonb_array_elements_text(clause -> 'grams')) END;
        pattern := '%' || replace(replace(replace(term, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%';
        IF clause ->> 'kind' = 'gram' THEN
          -- A 1–2-character term: the planner knows its frequency (cjk_grams' element statistics), and reading rows
          -- costs about what the gram index costs per match, so the window would seldom pay.
          strategy := 'planned';
        END IF;
      END IF;
      LOOP
        ids := '{}'; sessions := '{}'; roles := '{}'; stamps := '{}'; tools := '{}';
        full_window := false;
        rare := false;
        settled := false;
        IF single AND strategy IS NULL THEN
          OPEN recent_rows(tenant, grams, clause ->> 'kind', term, pattern, probe_rows, 2 * probe_rows);
          LOOP
            FETCH recent_rows INTO hit;
            EXIT WHEN NOT FOUND;
            full_window := full_window OR hit.rn = 2 * probe_rows;
            IF hit.hit THEN
              ids := ids || hit.id; sessions := sessions || hit.session_id; roles := roles || hit.role;
              stamps := stamps || hit."timestamp"; tools := tools || hit.tool_name;
              EXIT WHEN cardinality(ids) >= fetch_rows;
            END IF;
            -- At row probe_rows, reading on costs about (fetch_rows - matches) / density rows (a microsecond each),
            -- the index about as many microseconds as the tenant has matches, plus a plan: read on only when the
            -- rows left to read are fewer than 100 + the matches so far (the fewest the index would cost).
            IF hit.rn < 2 * probe_rows
               AND ((hit.rn = 50 AND cardinality(ids) = 0)
                    OR (hit.rn = probe_rows AND (fetch_rows - cardinality(ids)) * probe_rows
                                                >= cardinality(ids) * (100 + cardinality(ids)))) THEN
              strategy := CASE WHEN cardinality(ids) = 0 THEN 'index' ELSE 'planned' END;
              EXIT;
            END IF;
          END LOOP;
          CLOSE recent_rows;
          settled := strategy IS NULL AND (cardinality(ids) >= fetch_rows OR NOT full_window);
          IF NOT settled THEN strategy := coalesce(strategy, 'planned'); END IF;
        ELSIF single THEN
          NULL;  -- decided: a gram term, or a window that could not fill the page
        ELSIF statements.probe IS NOT NULL THEN
          -- The probe is the answer when it holds fetch_rows matches (the first ones: any match before the last of
          -- them lies in the window) or when its window holds the whole scope (no window_end row). A term without a
          -- match among the first 50 rows is left to the search at once (a term that finds nothing costs 50 rows,
          -- not the window). Read a row at a time, so that a common term stops early.
          PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
          OPEN probe_cursor FOR EXECUTE statements.probe USING query;
          PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
          LOOP
            FETCH probe_cursor INTO hit;
            EXIT WHEN NOT FOUND;
            full_window := full_window OR hit.window_end;
            IF hit.hit THEN
              ids := ids || hit.id; sessions := sessions || hit.session_id; roles := roles || hit.role;
              stamps := stamps || hit."timestamp"; tools := tools || hit.tool_name;
              EXIT WHEN cardinality(ids) >= fetch_rows;
            ELSIF hit.first_end AND cardinality(ids) = 0 THEN
              rare := true;
              EXIT;
            END IF;
          END LOOP;
          CLOSE probe_cursor;
          settled := NOT rare AND (cardinality(ids) >= fetch_rows OR NOT full_window);
        END IF;
        IF NOT settled THEN
          ids := '{}'; sessions := '{}'; roles := '{}'; stamps := '{}'; tools := '{}';
          IF strategy = 'index' THEN
            -- The term's grams through the gram index, then the text (the CTE keeps the recency index out).
            FOR hit IN
              WITH found AS MATERIALIZED (
                SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name
                  FROM public.messages m
                 WHERE m.tenant_id = tenant AND m.cjk_grams @> grams
                   AND CASE clause ->> 'kind' WHEN 'strpos' THEN strpos(m.indexed_text, term) <> 0
                                              WHEN 'ilike' THEN m.indexed_text ILIKE pattern ESCAPE '\\'
                                              ELSE true END)
              SELECT * FROM found f ORDER BY f."timestamp" DESC, f.id DESC LIMIT fetch_rows
            LOOP
              ids := ids || hit.id; sessions := sessions || hit.session_id; roles := roles || hit.role;
              stamps := stamps || hit."timestamp"; tools := tools || hit.tool_name;
            END LOOP;
          ELSE
            IF single THEN
              statement := $q$
                SELECT m.id, m.session_id, m.role, m."timestamp", m.tool_name
                  FROM public.messages m
                 WHERE m.tenant_id = $7 AND m.cjk_grams @> $2
                   AND CASE $3 WHEN 'strpos' THEN strpos(m.indexed_text, $4) <> 0
                               WHEN 'ilike' THEN m.indexed_text ILIKE $5 ESCAPE '\\'
                               ELSE true END
                 ORDER BY m."timestamp" DESC, m.id DESC
                 LIMIT $6$q$;
            ELSE
              statement := statements.matches;
            END IF;
            -- Planned for this call with its values (a custom plan: the planner judges the term's frequency in the
            -- tenant from the statistics and picks the recency or the gram index). A statement run by EXECUTE in a
            -- loop or a cursor is planned under plan_cache_mode as a prepared one is, hence the switch around it.
            PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
            FOR hit IN EXECUTE statement USING query, grams, clause ->> 'kind', term, pattern, fetch_rows, tenant LOOP
              ids := ids || hit.id; sessions := sessions || hit.session_id; roles := roles || hit.role;
              stamps := stamps || hit."timestamp"; tools := tools || hit.tool_name;
            END LOOP;
            PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
          END IF;
        END IF;
        EXIT WHEN every_row OR cardinality(ids) = 0;
        -- One probe of the (small, partial) index of hidden rows per match.
        SELECT coalesce(array_agg(u.id), '{}') INTO hidden
          FROM unnest(ids) AS u (id)
          CROSS JOIN LATERAL (
            SELECT 1 FROM public.message_state x
             WHERE x.tenant_id = tenant AND x.message_id = u.id AND NOT x.active AND NOT x.compacted LIMIT 1) AS x;
        -- Enough visible matches for the page, or every match of the scope fetched.
        EXIT WHEN cardinality(ids) - cardinality(hidden) >= wanted OR cardinality(ids) < fetch_rows;
        -- Again with twice as many more as were hidden (at least one was): a cluster of hidden rows grows it fast.
        fetch_rows := fetch_rows + 2 * cardinality(hidden) + 2;
        IF NOT single THEN
          SELECT * INTO statements FROM public.dc_search_statements(plan || jsonb_build_object('fetch', fetch_rows), tenant);
        END IF;
      END LOOP;
    END IF;
    IF cardinality(ids) > page_skip THEN
      RETURN QUERY
        SELECT h.id, h.session_id, h.role, h.stamp, h.tool_name, t.indexed_text, s.source, s.model, s.started_at,
               prev.role, prev.content, nxt.role, nxt.content
          FROM (SELECT u.id, u.session_id, u.role, u.stamp, u.tool_name, u.ord
                  FROM unnest(ids, sessions, roles, stamps, tools) WITH ORDINALITY AS u (id, session_id, role, stamp, tool_name, ord)
                 WHERE NOT (u.id = ANY(hidden))
                 ORDER BY u.ord OFFSET page_skip LIMIT lim) AS h
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
