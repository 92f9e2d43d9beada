// 0012: dc_indexed_text (0001, SPEC §14.2) becomes inlinable (issue #11: CPU per message). Never edit a migration
// that has landed; add a new one.
//
// Its body held sub-selects (the text parts joined, the tool calls joined), and PostgreSQL never inlines a SQL
// function with sub-selects: each of the three generated columns that call it (indexed_text, search_tsv, cjk_grams)
// planned the body again for every inserted row — ~0.3 ms of a single-row insert's ~1.4 ms here. The sub-selects move
// into two helper functions called only for rows that have parts or tool calls; the body left is one expression,
// which PostgreSQL inlines into the insert's own plan. The text is the same for every input (the helpers are the
// sub-selects verbatim), so the stored columns and their indexes stay valid and nothing is rewritten
// (test/integration/store/indexedText.test.ts compares both definitions).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION dc_parts_joined(content_parts jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT string_agg(p ->> 'text', ' ' ORDER BY ord)
                         FROM jsonb_array_elements(content_parts) WITH ORDINALITY AS e(p, ord)
                        WHERE p ->> 'type' = 'text'), '')
    $$`.execute(db);
  await sql`
    CREATE FUNCTION dc_calls_joined(tool_calls jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT string_agg(coalesce(c -> 'function' ->> 'name', '') || ' ' ||
                                         coalesce(c -> 'function' ->> 'arguments', ''), ' ' ORDER BY ord)
                         FROM jsonb_array_elements(tool_calls) WITH ORDINALITY AS e(c, ord)), '')
    $$`.execute(db);
  await sql`
    CREATE OR REPLACE FUNCTION dc_indexed_text(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN content_parts IS NULL THEN coalesce(content, '') ELSE dc_parts_joined(content_parts) END
        || ' ' || coalesce(tool_name, '') || ' ' ||
        CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN dc_calls_joined(tool_calls) ELSE '' END
    $$`.execute(db);
}

/**
 * The 0001 body (copied: a landed migration is never edited), restored by down() and compared with the new one by
 * test/integration/store/indexedText.test.ts.
 */
export const INDEXED_TEXT_0001_BODY = `
  SELECT
    CASE WHEN content_parts IS NULL THEN coalesce(content, '')
         ELSE coalesce((SELECT string_agg(p ->> 'text', ' ' ORDER BY ord)
                          FROM jsonb_array_elements(content_parts) WITH ORDINALITY AS e(p, ord)
                         WHERE p ->> 'type' = 'text'), '')
    END
    || ' ' || coalesce(tool_name, '') || ' ' ||
    coalesce((SELECT string_agg(coalesce(c -> 'function' ->> 'name', '') || ' ' ||
                                coalesce(c -> 'function' ->> 'arguments', ''), ' ' ORDER BY ord)
                FROM jsonb_array_elements(
                       CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN tool_calls ELSE '[]'::jsonb END
                     ) WITH ORDINALITY AS e(c, ord)), '')`;

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION dc_indexed_text(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${sql.raw(INDEXED_TEXT_0001_BODY)}
    $$`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_calls_joined(jsonb)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_parts_joined(jsonb)`.execute(db);
}
