// 0002: what the search fast paths need (SPEC §14, DESIGN.md §4). Never edit a migration that has landed.
//
// - `search_tsv` is redefined: the 'simple' tsvector of indexed_text (whole tokens such as `src/cursor.rs`) plus the
//   tsvector of the same text with every non-alphanumeric run replaced by a space (`src`, `cursor`, `rs`), so words
//   inside paths, dotted names and punctuation are found; phrase queries on compound terms match the split words.
// - `cjk_grams`: every CJK unigram and bigram of indexed_text (runs of the SPEC §14.4 ranges), so 1–2-character
//   CJK terms have an index (pg_trgm needs 3 characters). It only prefilters: search always rechecks with ILIKE.
//   Computed by the database (generated column), so every insert path fills it and it can never be stale.
// - GIN indexes lead with tenant_id (btree_gin, a trusted extension), so a small tenant's search reads only its
//   own posting lists; the transcript neighbours used for result context get a (tenant, session, time, id) index.
// The view tenant_messages (`SELECT *`) is recreated so it exposes the new column.
import { type Kysely, sql } from 'kysely';

const CJK_CLASS = '[\\u3000-\\u30ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\uac00-\\ud7af\\U00020000-\\U0002a6df]';

export async function up(db: Kysely<unknown>): Promise<void> {
  // btree_gin is trusted (PostgreSQL ≥ 13): the database owner may create it without superuser rights.
  await sql`CREATE EXTENSION IF NOT EXISTS btree_gin`.execute(db);

  await sql`
    CREATE FUNCTION dc_search_tsv(indexed_text text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT to_tsvector('simple'::regconfig, indexed_text)
          || to_tsvector('simple'::regconfig, regexp_replace(indexed_text, '[^[:alnum:]]+', ' ', 'g'))
    $$`.execute(db);
  // Query side of the same split (infra/db/search/planner.ts): a term's words, as the document's second half has them.
  await sql`
    CREATE FUNCTION dc_search_words(term text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT regexp_replace(term, '[^[:alnum:]]+', ' ', 'g')
    $$`.execute(db);
  // A prefix match on the last word of a tsquery made by plainto_/phraseto_tsquery: `:*` appended to the text
  // PostgreSQL itself produced for it (never user text).
  await sql`
    CREATE FUNCTION dc_prefix_tsquery(query tsquery) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN numnode(query) = 0 THEN query ELSE (query::text || ':*')::tsquery END
    $$`.execute(db);
  // Mirrors cjkGramsOf (engine/search/query.ts): unigrams and bigrams of each maximal CJK run, distinct.
  await sql`
    CREATE FUNCTION dc_cjk_grams(indexed_text text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
    DECLARE
      run text[];
      chars text[];
      grams text[] := '{}';
    BEGIN
      FOR run IN SELECT regexp_matches(indexed_text, '${sql.raw(CJK_CLASS)}+', 'g') LOOP
        chars := regexp_split_to_array(run[1], '');
        grams := grams || chars;
        FOR i IN 1 .. cardinality(chars) - 1 LOOP
          grams := grams || (chars[i] || chars[i + 1]);
        END LOOP;
      END LOOP;
      IF cardinality(grams) > 1 THEN
        grams := ARRAY(SELECT DISTINCT g FROM unnest(grams) AS g);
      END IF;
      RETURN grams;
    END
    $fn$`.execute(db);

  // Search result context (SPEC §14.8) of array content: the text parts joined with ' ', or a placeholder.
  await sql`
    CREATE FUNCTION dc_parts_text(content_parts jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT coalesce(string_agg(coalesce(e.p ->> 'text', ''), ' ' ORDER BY e.ord), '[multimodal content]')
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(content_parts) = 'array' THEN content_parts ELSE '[]' END)
             WITH ORDINALITY AS e(p, ord)
       WHERE e.p ->> 'type' = 'text'
    $$`.execute(db);

  await sql`DROP VIEW tenant_messages`.execute(db);
  await sql`DROP INDEX messages_search_trgm`.execute(db);
  await sql`ALTER TABLE messages DROP COLUMN search_tsv`.execute(db);
  await sql`
    ALTER TABLE messages
      ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS
        (dc_search_tsv(dc_indexed_text(content, content_parts, tool_name, tool_calls))) STORED,
      ADD COLUMN cjk_grams text[] GENERATED ALWAYS AS
        (dc_cjk_grams(dc_indexed_text(content, content_parts, tool_name, tool_calls))) STORED`.execute(db);

  await sql`CREATE INDEX messages_search_tsv ON messages USING gin (tenant_id, search_tsv)`.execute(db);
  await sql`CREATE INDEX messages_search_trgm ON messages USING gin (tenant_id, indexed_text gin_trgm_ops)`.execute(db);
  await sql`CREATE INDEX messages_search_cjk ON messages USING gin (tenant_id, cjk_grams)`.execute(db);
  await sql`CREATE INDEX messages_session_order ON messages (tenant_id, session_id, "timestamp", id)`.execute(db);

  await sql`
    CREATE VIEW tenant_messages AS
      SELECT * FROM messages WHERE tenant_id = current_setting('app.tenant_id', true)`.execute(db);
  await sql`GRANT SELECT ON tenant_messages TO dc_tenant`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW tenant_messages`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_session_order`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_search_cjk`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_search_trgm`.execute(db);
  await sql`ALTER TABLE messages DROP COLUMN cjk_grams, DROP COLUMN search_tsv`.execute(db);
  await sql`
    ALTER TABLE messages ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS
      (to_tsvector('simple'::regconfig, dc_indexed_text(content, content_parts, tool_name, tool_calls))) STORED`.execute(
    db,
  );
  await sql`CREATE INDEX messages_search_tsv ON messages USING gin (search_tsv)`.execute(db);
  await sql`CREATE INDEX messages_search_trgm ON messages USING gin (indexed_text gin_trgm_ops)`.execute(db);
  await sql`
    CREATE VIEW tenant_messages AS
      SELECT * FROM messages WHERE tenant_id = current_setting('app.tenant_id', true)`.execute(db);
  await sql`GRANT SELECT ON tenant_messages TO dc_tenant`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_parts_text(jsonb)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_cjk_grams(text)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_prefix_tsquery(tsquery)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_search_words(text)`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_search_tsv(text)`.execute(db);
}
