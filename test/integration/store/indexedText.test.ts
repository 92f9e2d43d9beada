// Migrations 0012 and 0024 (issue #11: CPU per message): the functions the generated search columns call for every
// inserted row are redefined — 0012 made dc_indexed_text inlinable, 0024 made it and its helpers and dc_search_tsv
// PL/pgSQL, so that an insert statement parses no function body. The stored columns were computed by the first
// definitions and are not rewritten, so every definition must give the same text and tsvector for every input:
// compared here over random messages (content, text and image parts, tool names, tool calls as arrays, objects,
// strings or absent), with the 0001 and 0002 bodies recreated under other names.
import fc from 'fast-check';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { INDEXED_TEXT_0001_BODY } from '../../../infra/db/migrations/0012_inline_indexed_text.js';
import { SEARCH_TSV_0002_BODY } from '../../../infra/db/migrations/0024_generated_plpgsql.js';
import { SAFE_TSVECTOR_TEXT_BYTES } from '../../../infra/db/migrations/0028_oversized_tsvector.js';
import { migrationProvider } from '../../../infra/db/migrations/index.js';
import { searchMessages } from '../../../infra/db/search/index.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  // The 0001 definition, verbatim, under another name.
  await sql`
    CREATE FUNCTION dc_indexed_text_0001(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${sql.raw(INDEXED_TEXT_0001_BODY)}
    $$`.execute(testDb.db);
  await sql`
    CREATE FUNCTION dc_search_tsv_0002(indexed_text text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${sql.raw(SEARCH_TSV_0002_BODY)}
    $$`.execute(testDb.db);
});
afterAll(async () => {
  await testDb?.drop();
});

/** Text PostgreSQL can hold (no NUL), with CJK, emoji and whitespace among ASCII. */
const text = fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replaceAll('\u0000', ''));
const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('text') }),
  fc.record({ type: fc.constant('image_url'), image_url: fc.record({ url: text }) }),
);
const call = fc.oneof(
  fc.record({ id: text, type: fc.constant('function'), function: fc.record({ name: text, arguments: text }) }),
  fc.record({ id: text, type: fc.constant('function'), function: fc.record({ name: text }) }),
  fc.record({ id: text }),
);
const message = fc.record({
  content: fc.option(text, { nil: null }),
  content_parts: fc.option(fc.array(part, { maxLength: 4 }), { nil: null }),
  tool_name: fc.option(text, { nil: null }),
  tool_calls: fc.option(fc.oneof(fc.array(call, { maxLength: 3 }), fc.record({ name: text }), text), { nil: null }),
});

describe('dc_indexed_text and dc_search_tsv (migrations 0012, 0024)', () => {
  it('give the text and the tsvector the 0001 and 0002 definitions gave, for every message', async () => {
    const messages = fc.sample(message, { numRuns: 2_000, seed: 12 });
    const { rows } = await sql<{ i: number; now: string; before: string; tsv: string; tsv_before: string }>`
      SELECT r.i, dc_indexed_text(r.content, r.content_parts, r.tool_name, r.tool_calls) AS now,
             dc_indexed_text_0001(r.content, r.content_parts, r.tool_name, r.tool_calls) AS before,
             dc_search_tsv(dc_indexed_text(r.content, r.content_parts, r.tool_name, r.tool_calls))::text AS tsv,
             dc_search_tsv_0002(dc_indexed_text_0001(r.content, r.content_parts, r.tool_name, r.tool_calls))::text
               AS tsv_before
        FROM jsonb_to_recordset(${JSON.stringify(messages.map((m, i) => ({ ...m, i })))}::jsonb)
             AS r(i integer, content text, content_parts jsonb, tool_name text, tool_calls jsonb)`.execute(testDb.db);
    expect(rows).toHaveLength(2_000);
    expect(rows.filter((r) => r.now !== r.before)).toEqual([]);
    expect(rows.filter((r) => r.tsv !== r.tsv_before)).toEqual([]);
    expect(rows.filter((r) => r.tsv !== '').length).toBeGreaterThan(1_000);
    // The sample reaches every branch: parts with text, tool calls as arrays with names, and neither.
    expect(rows.filter((r) => messages[r.i]?.content_parts?.some((p) => 'text' in p && p.text)).length).toBeGreaterThan(
      100,
    );
    expect(rows.filter((r) => Array.isArray(messages[r.i]?.tool_calls) && r.now.trim() !== '').length).toBeGreaterThan(
      100,
    );
  });

  it('compares against the body 0001 really created (migrated up to 0011 only)', async () => {
    const before = await createTestDatabase(inject('databaseUrl'), { migrate: false });
    try {
      const migrated = await new Migrator({ db: before.db, provider: migrationProvider }).migrateTo(
        '0011_notified_since',
      );
      expect(migrated.error).toBeUndefined();
      const { rows } = await sql<{ src: string }>`
        SELECT prosrc AS src FROM pg_proc WHERE proname = 'dc_indexed_text'`.execute(before.db);
      const squeeze = (text: string) => text.replace(/\s+/g, ' ').trim();
      expect(rows.map((r) => squeeze(r.src))).toEqual([squeeze(INDEXED_TEXT_0001_BODY)]);
    } finally {
      await before.drop();
    }
  });

  it('are PL/pgSQL, as are the other functions the generated columns call: an insert parses no SQL function body', async () => {
    const { rows } = await sql<{ name: string; language: string }>`
      SELECT p.proname AS name, l.lanname AS language FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
       WHERE p.proname IN ('dc_indexed_text', 'dc_parts_joined', 'dc_calls_joined', 'dc_search_tsv', 'dc_cjk_grams')
       ORDER BY p.proname`.execute(testDb.db);
    expect(rows).toEqual(
      ['dc_calls_joined', 'dc_cjk_grams', 'dc_indexed_text', 'dc_parts_joined', 'dc_search_tsv'].map((name) => ({
        name,
        language: 'plpgsql',
      })),
    );
  });

  it('fill the generated columns of a row the tenant role inserts, through row-level security', async () => {
    const tenant = 'tenant-generated';
    await sql`INSERT INTO tenants (id, name) VALUES (${tenant}, ${tenant})`.execute(testDb.db);
    await sql`INSERT INTO sessions (tenant_id, id, conversation_id) VALUES (${tenant}, 's-gen', 'c-gen')`.execute(
      testDb.db,
    );
    const calls = [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/a.ts"}' } }];
    const parts = [
      { type: 'text', text: '部署 failed' },
      { type: 'image_url', image_url: { url: 'https://x/y.png' } },
    ];
    const stored = await withTenant(testDb.db, tenant, async (tx) => {
      await sql`
        INSERT INTO messages (tenant_id, session_id, conversation_id, role, content, tool_calls, content_parts)
        VALUES (${tenant}, 's-gen', 'c-gen', 'assistant', 'on it', ${JSON.stringify(calls)}::jsonb, NULL),
               (${tenant}, 's-gen', 'c-gen', 'user', NULL, NULL, ${JSON.stringify(parts)}::jsonb)`.execute(tx);
      return (
        await sql<{ indexed_text: string; tsv: string; grams: string[] }>`
          SELECT indexed_text, search_tsv::text AS tsv, cjk_grams AS grams FROM messages ORDER BY id`.execute(tx)
      ).rows;
    });
    expect(stored.map((r) => r.indexed_text)).toEqual(['on it  read_file {"path":"src/a.ts"}', '部署 failed  ']);
    // Both halves of the document: the parser's own tokens ('src/a.ts') and the words split at punctuation.
    expect(stored[0]?.tsv).toContain("'src/a.ts':6");
    expect(stored[0]?.tsv).toContain("'read':3,9");
    expect(stored[1]?.grams).toEqual(expect.arrayContaining(['部', '署', '部署']));
  });
});

/** `count` distinct dotted tokens (`w1.v1 w2.v2 …`): each gives three lexemes, as long as PostgreSQL allows. */
const tokens = (count: number, from = 1) =>
  Array.from({ length: count }, (_, i) => `w${from + i}.v${from + i}`).join(' ');

describe('a text whose words do not fit in one tsvector (migration 0028)', () => {
  it('within SAFE_TSVECTOR_TEXT_BYTES, the densest texts fit, with room to spare (the fast path needs no fallback)', async () => {
    // Each repeated to exactly the bound, through the 0002 definition (no fallback): its tsvector's lexemes and
    // positions (its size less its header and 4 bytes of entry per lexeme) take under 5 bytes per byte of text, where
    // the bound allows 8 (PostgreSQL's cap is 1,048,575 bytes).
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const pairs = Array.from(letters).flatMap((a) => Array.from(letters).map((b) => `${a}${b}1`));
    const many = (count: number, token: (i: number) => string) => Array.from({ length: count }, (_, i) => token(i));
    const dense = [
      many(70_000, (i) => letters[i % 26]!).join(' '),
      many(50_000, (i) => pairs[i % pairs.length]!).join(' '),
      many(30_000, String).join(' '),
      tokens(15_000),
      many(30_000, (i) => `${i}-${i * 7}`).join(' '),
      many(20_000, (i) => `a${i}-b${i}-c${i}-d${i}`).join(' '),
      many(30_000, (i) => `${i}.x/${i}-${i}`).join(' '),
      many(30_000, (i) => `${i}@x${i}.io`).join(' '),
      many(30_000, (i) => `${i.toString(36)}.io/${(i * 7_919).toString(36)}`).join(' '),
      many(30_000, (i) => `İȺ${i}`).join(' '),
    ].map((text) =>
      Buffer.from(text)
        .subarray(0, SAFE_TSVECTOR_TEXT_BYTES)
        .toString()
        .replace(/\uFFFD$/, ''),
    );
    for (const text of dense) {
      expect(Buffer.byteLength(text)).toBeGreaterThan(SAFE_TSVECTOR_TEXT_BYTES - 8);
      const { rows } = await sql<{ size: number }>`
        SELECT pg_column_size(t) - 8 - 4 * length(t) AS size FROM dc_search_tsv_0002(${text}) AS t`.execute(testDb.db);
      expect(rows[0]!.size).toBeLessThan(5 * SAFE_TSVECTOR_TEXT_BYTES);
    }
  });

  it('gets the tsvector of the first of its leading halves that fits, less a torn token; any other text, as before', async () => {
    const oversized = tokens(60_000);
    const [half, quarter] = [Math.floor(oversized.length / 2), Math.floor(oversized.length / 4)];
    for (const text of [oversized, oversized.slice(0, half)]) {
      await expect(sql`SELECT dc_search_tsv_0002(${text})`.execute(testDb.db)).rejects.toThrow(
        /string is too long for tsvector/,
      );
    }
    // 817,787 bytes do not fit, nor their first half; their first quarter does, and is what is indexed, without the
    // token the cut ends inside (`w16190.v1619` of `w16190.v16190`: no word of the text).
    const quarterText = oversized.slice(0, quarter);
    const torn = /\S*$/.exec(quarterText)![0];
    expect(oversized[quarter]).not.toBe(' ');
    expect(torn.length).toBeGreaterThan(0);
    const { rows } = await sql<{ first: boolean; last: boolean; torn: boolean; same: boolean }>`
      WITH t AS (SELECT dc_search_tsv(${oversized}) AS tsv)
      SELECT tsv @@ plainto_tsquery('simple', 'w1.v1') AS first,
             tsv @@ plainto_tsquery('simple', 'w60000.v60000') AS last,
             tsv @@ plainto_tsquery('simple', ${torn}) AS torn,
             tsv = dc_search_tsv_0002(${quarterText.slice(0, quarterText.length - torn.length)}) AS same
        FROM t`.execute(testDb.db);
    expect(rows[0]).toEqual({ first: true, last: false, torn: false, same: true });
    // Just over the bound and fitting: the whole text, as the 0002 definition gives it.
    const large = tokens(16_000, 100_000);
    expect(Buffer.byteLength(large)).toBeGreaterThan(SAFE_TSVECTOR_TEXT_BYTES);
    const { rows: same } = await sql<{ same: boolean }>`
      SELECT dc_search_tsv(${large}) = dc_search_tsv_0002(${large}) AS same`.execute(testDb.db);
    expect(same[0]?.same).toBe(true);
  });

  it('is stored, found by its first words on the Latin path and by any of its text on the CJK path', async () => {
    const tenant = 'tenant-oversized';
    await sql`INSERT INTO tenants (id, name) VALUES (${tenant}, ${tenant})`.execute(testDb.db);
    await sql`INSERT INTO sessions (tenant_id, id, conversation_id) VALUES (${tenant}, 's-big', 'c-big')`.execute(
      testDb.db,
    );
    const content = `${tokens(60_000)} 末尾の圧縮`;
    await withTenant(testDb.db, tenant, async (tx) => {
      await sql`
        INSERT INTO messages (tenant_id, session_id, conversation_id, role, content)
        VALUES (${tenant}, 's-big', 'c-big', 'tool', ${content})`.execute(tx);
    });
    const found = async (query: string) => (await searchMessages(testDb.db, tenant, query)).length;
    expect(await found('w7.v7')).toBe(1);
    expect(await found('圧縮')).toBe(1);
    expect(await found('末尾の圧縮')).toBe(1);
    expect(await found('w59999.v59999')).toBe(0);
  });
});
