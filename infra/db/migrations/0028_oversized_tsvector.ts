// 0028: a message whose words do not fit in one tsvector is stored, its first words indexed (issue #11, SPEC §14.2,
// §14.5; DESIGN.md §4). Never edit a migration that has landed; add a new one.
//
// PostgreSQL caps a tsvector at 1 MB of lexemes and positions ("string is too long for tsvector", SQLSTATE 54000).
// The search column's tsvector (0002: the text's tokens and its letter-and-digit words) reaches that from about
// half a megabyte of distinct tokens — a tool's output listing hashes, ids or file names, within the request
// limit of 1 MiB — and the insert of the whole batch failed: the gateway answered 400 for content nothing was wrong
// with, and a chat turn whose reply was such a text could not be stored. The spec is silent on texts beyond
// PostgreSQL's limit; stored and found is what a chat backend's users expect.
//
// dc_search_tsv now gives, for every text it could index before, the same tsvector (the stored column is not
// rewritten, and test/integration/store/indexedText.test.ts compares the definitions), and for a text it could not,
// the tsvector of the first of its leading halves (half, quarter, …) that fits, without the token the cut ends
// inside, with a WARNING in the server's log. The Latin path (§14.5) then finds the message by the words of that
// part; the CJK path (§14.6) matches the whole text as before. A text of at most SAFE_TSVECTOR_TEXT_BYTES bytes is
// indexed without the subtransaction that catching the error costs: the densest texts tried (one-letter words,
// chains of hyphenated or dotted tokens, numbers, URLs, addresses) give the two tsvectors under 4.4 bytes of lexemes
// and positions per byte of text, and the bound allows 8. The function is PARALLEL RESTRICTED: PostgreSQL 15 and 16
// cannot start a subtransaction in a parallel worker (inserts never compute generated columns in one).
import { type Kysely, sql } from 'kysely';

/** 1,048,575 bytes (PostgreSQL's MAXSTRPOS) ÷ 8: texts up to this long are indexed without catching the error. */
export const SAFE_TSVECTOR_TEXT_BYTES = 131_071;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION dc_search_tsv(indexed_text text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL RESTRICTED AS $$
    DECLARE
      part text := indexed_text;
      whole text;
      torn text;
      chars integer;
      bytes integer;
      cut boolean := false;
      result tsvector;
    BEGIN
      LOOP
        IF octet_length(part) IS NULL OR octet_length(part) <= ${sql.lit(SAFE_TSVECTOR_TEXT_BYTES)} THEN
          result := to_tsvector('simple'::regconfig, part)
                 || to_tsvector('simple'::regconfig, regexp_replace(part, '[^[:alnum:]]+', ' ', 'g'));
          EXIT;
        END IF;
        BEGIN
          result := to_tsvector('simple'::regconfig, part)
                 || to_tsvector('simple'::regconfig, regexp_replace(part, '[^[:alnum:]]+', ' ', 'g'));
          EXIT;
        EXCEPTION WHEN program_limit_exceeded THEN
          -- The leading part of at most half as many bytes: half the characters, fewer while they take more.
          whole := part;
          bytes := octet_length(whole) / 2;
          chars := length(whole) / 2;
          part := left(whole, chars);
          WHILE octet_length(part) > bytes LOOP
            chars := chars * 3 / 4;
            part := left(whole, chars);
          END LOOP;
          -- Without the token the cut ends inside (its first characters are no word of the text); only its last
          -- 2,048 characters are looked at (a longer token is not indexed anyway).
          IF substr(whole, chars + 1, 1) !~ '\\s' THEN
            torn := substring(right(part, 2048) from '\\S*$');
            part := left(part, length(part) - length(torn));
          END IF;
          cut := true;
        END;
      END LOOP;
      IF cut THEN
        RAISE WARNING 'dc_search_tsv: a text of % bytes is indexed by its first %: its words do not fit in a tsvector',
          octet_length(indexed_text), octet_length(part);
      END IF;
      RETURN result;
    END
    $$`.execute(db);
}

/** 0024's definition. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION dc_search_tsv(indexed_text text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    BEGIN
      RETURN to_tsvector('simple'::regconfig, indexed_text)
          || to_tsvector('simple'::regconfig, regexp_replace(indexed_text, '[^[:alnum:]]+', ' ', 'g'));
    END
    $$`.execute(db);
}
