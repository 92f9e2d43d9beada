// Migration 0012 (issue #11: CPU per message): dc_indexed_text, which the generated search columns call for every
// inserted row, is redefined so that PostgreSQL inlines it. The stored columns were computed by the 0001 definition
// and are not rewritten, so both must give the same text for every input: compared here over random messages
// (content, text and image parts, tool names, tool calls as arrays, objects, strings or absent), with the 0001 body
// recreated under another name. Then: the new definition is inlined (no function call left in the plan).
import fc from 'fast-check';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { INDEXED_TEXT_0001_BODY } from '../../../infra/db/migrations/0012_inline_indexed_text.js';
import { migrationProvider } from '../../../infra/db/migrations/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  // The 0001 definition, verbatim, under another name.
  await sql`
    CREATE FUNCTION dc_indexed_text_0001(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$${sql.raw(INDEXED_TEXT_0001_BODY)}
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

describe('dc_indexed_text (migration 0012)', () => {
  it('gives the text the 0001 definition gave, for every message', async () => {
    const messages = fc.sample(message, { numRuns: 2_000, seed: 12 });
    const { rows } = await sql<{ i: number; now: string; before: string }>`
      SELECT r.i, dc_indexed_text(r.content, r.content_parts, r.tool_name, r.tool_calls) AS now,
             dc_indexed_text_0001(r.content, r.content_parts, r.tool_name, r.tool_calls) AS before
        FROM jsonb_to_recordset(${JSON.stringify(messages.map((m, i) => ({ ...m, i })))}::jsonb)
             AS r(i integer, content text, content_parts jsonb, tool_name text, tool_calls jsonb)`.execute(testDb.db);
    expect(rows).toHaveLength(2_000);
    expect(rows.filter((r) => r.now !== r.before)).toEqual([]);
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

  it('is inlined into the statements that call it: only its helpers remain as calls, for parts and tool calls', async () => {
    const { rows } = await sql<{ 'QUERY PLAN': string }>`
      EXPLAIN (VERBOSE, COSTS OFF)
      SELECT dc_indexed_text(content, content_parts, tool_name, tool_calls) FROM messages`.execute(testDb.db);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).not.toContain('dc_indexed_text(');
    expect(plan).toContain('dc_parts_joined(');
    expect(plan).toContain('dc_calls_joined(');
  });
});
