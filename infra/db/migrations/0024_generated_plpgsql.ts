// 0024: the functions the generated search columns call become PL/pgSQL (issue #11: CPU per message; SPEC §14.2,
// DESIGN.md §4). Never edit a migration that has landed; add a new one.
//
// A perf profile of bench:load showed PostgreSQL spending ~7.5 % of its CPU per batch in ExecInitStoredGenerated,
// three quarters of it parsing and analysing SQL function bodies: at the start of every INSERT statement the planner
// inlines dc_indexed_text into each of the three generated columns (0012), and on the way parses dc_parts_joined,
// dc_calls_joined and dc_search_tsv only to find it cannot inline them (sub-selects; a parameter used twice); then
// fmgr_sql parses and plans each of those again where a row calls it. A PL/pgSQL function is never inlined and is
// compiled and planned once per connection, so an insert statement starts without parsing anything. Measured with
// pgbench (one connection, prepared, the same 2-row insert, asynchronous commit to leave the CPU alone): 1.47 →
// 1.23 ms per batch for plain text, 1.38 → 0.90 ms for an assistant message with tool calls and a message with parts;
// in bench:load, PostgreSQL's CPU per accepted batch went from 2.7–2.8 to 2.4 ms (+8 to +16 % messages/s in three
// back-to-back pairs of runs on this machine).
// (SQL-standard bodies, stored pre-parsed, were tried: reading the stored node trees cost more than the parse.)
// The bodies are the same expressions, so every stored column and its index stays valid and nothing is rewritten
// (test/integration/store/indexedText.test.ts compares them with the earlier definitions).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION dc_parts_joined(content_parts jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN coalesce((SELECT string_agg(p ->> 'text', ' ' ORDER BY ord)
                         FROM jsonb_array_elements(content_parts) WITH ORDINALITY AS e(p, ord)
                        WHERE p ->> 'type' = 'text'), '');
    END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_calls_joined(tool_calls jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN coalesce((SELECT string_agg(coalesce(c -> 'function' ->> 'name', '') || ' ' ||
                                         coalesce(c -> 'function' ->> 'arguments', ''), ' ' ORDER BY ord)
                         FROM jsonb_array_elements(tool_calls) WITH ORDINALITY AS e(c, ord)), '');
    END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_indexed_text(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN CASE WHEN content_parts IS NULL THEN coalesce(content, '') ELSE dc_parts_joined(content_parts) END
        || ' ' || coalesce(tool_name, '') || ' ' ||
        CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN dc_calls_joined(tool_calls) ELSE '' END;
    END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_search_tsv(indexed_text text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN to_tsvector('simple'::regconfig, indexed_text)
          || to_tsvector('simple'::regconfig, regexp_replace(indexed_text, '[^[:alnum:]]+', ' ', 'g'));
    END
    $$`.execute(db);
}

/**
 * The dc_search_tsv body of 0002 (copied: a landed migration is never edited), restored by down() and compared with
 * the new one by test/integration/store/indexedText.test.ts.
 */
export const SEARCH_TSV_0002_BODY = `
  SELECT to_tsvector('simple'::regconfig, indexed_text)
      || to_tsvector('simple'::regconfig, regexp_replace(indexed_text, '[^[:alnum:]]+', ' ', 'g'))`;

/** The SQL definitions of 0012 and 0002, as they were. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION dc_search_tsv(indexed_text text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${sql.raw(SEARCH_TSV_0002_BODY)}
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_indexed_text(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN content_parts IS NULL THEN coalesce(content, '') ELSE dc_parts_joined(content_parts) END
        || ' ' || coalesce(tool_name, '') || ' ' ||
        CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN dc_calls_joined(tool_calls) ELSE '' END
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_calls_joined(tool_calls jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT string_agg(coalesce(c -> 'function' ->> 'name', '') || ' ' ||
                                         coalesce(c -> 'function' ->> 'arguments', ''), ' ' ORDER BY ord)
                         FROM jsonb_array_elements(tool_calls) WITH ORDINALITY AS e(c, ord)), '')
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_parts_joined(content_parts jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT string_agg(p ->> 'text', ' ' ORDER BY ord)
                         FROM jsonb_array_elements(content_parts) WITH ORDINALITY AS e(p, ord)
                        WHERE p ->> 'type' = 'text'), '')
    $$`.execute(db);
}
