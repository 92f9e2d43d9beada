// Pages when superseded rows lie among the matches (SPEC §14.1, §14.9): since migrations/0023 the search fetches a
// few more matches than the page needs and leaves the hidden ones out afterwards, fetching again when too many were
// hidden. Every path (Latin by rank and by recency, CJK grams, substrings, the recency probe) against a brute-force
// scan, and the same answers with 0023 rolled back to 0010's functions and applied again.
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { migrateToLatest } from '../../../infra/db/migrate.js';
import { migrationProvider } from '../../../infra/db/migrations/index.js';
import { type SearchOptions, searchMessages, searchTuning } from '../../../infra/db/search/index.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { seedSession, user } from './searchFixtures.js';

let testDb: TestDatabase;
const T = 'tenant-hidden';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  // 600 rows, oldest first. Every third row speaks of 共通の話題 / shared topic; the newest of those are
  // superseded (50 rows), more than a page and its margin, so a page of the newest matches needs a second fetch.
  // Rare_ and Ancient_ rows have look-alikes with X in place of _ (a new one among the newest rows).
  // 古代の記録 / ancient record is only in old rows (the newest of them superseded too): nothing among the newest
  // rows matches it, so its search goes to the index.
  const rows = Array.from({ length: 600 }, (_, i) => {
    const shared = i % 3 === 0;
    const ancient = i % 3 === 1 && i < 150;
    const hidden = (shared && i >= 450) || (ancient && i >= 100);
    const text = shared
      ? `共通の話題 shared topic ${i}`
      : ancient
        ? `Ancient${i % 2 ? '_' : 'X'}古代の記録 ancient record ${i}`
        : i % 50 === 7 || i === 593
          ? `Rare${i % 100 === 57 || i % 100 === 7 ? '_' : 'X'}稀少な単語 rare word ${i}`
          : `普通の文 plain ${i}`;
    return { message: user(text), active: !hidden };
  });
  await seedSession(testDb.db, T, { rows });
  await sql`VACUUM ANALYZE messages`.execute(testDb.db);
});
afterAll(async () => {
  await testDb?.drop();
});

/** The visible rows containing `text` (case-insensitive), newest first, as a scan of the tenant finds them. */
async function bruteForce(text: string, every = false): Promise<number[]> {
  return withTenant(testDb.db, T, async (tx) =>
    (
      await sql<{ id: number }>`
        SELECT m.id FROM messages m JOIN message_state s ON s.message_id = m.id
         WHERE strpos(lower(m.indexed_text), lower(${text})) > 0 AND (${every} OR s.active OR s.compacted)
         ORDER BY m."timestamp" DESC, m.id DESC`.execute(tx)
    ).rows.map((r) => r.id),
  );
}

const ids = async (query: string, options: SearchOptions) =>
  (await searchMessages(testDb.db, T, query, options)).map((r) => r.id);

const PAGES = [
  [0, 20],
  [20, 20],
  [0, 100],
  [95, 5],
  [150, 30],
] as const;

describe('pages with superseded rows among the matches', () => {
  it.each([
    ['共通', 'a 2-character CJK term (gram)'],
    ['共通の話題', 'a longer CJK term (probe, then substring search)'],
    ['稀少な単語', 'a rare CJK term'],
    ['古代', 'a 2-character term found only in old rows (the index)'],
    ['古代の記録', 'a longer term found only in old rows (the index, then the text)'],
    ['ancient_古代', 'a cased term found only in old rows (the index, then ILIKE; _ is literal)'],
    ['rare_稀少', 'a rare cased term (ILIKE planned for the term; _ is literal)'],
  ])('%s — %s: every page equals the brute-force scan, with and without the probe', async (term) => {
    const expected = await bruteForce(term);
    expect(expected.length).toBeGreaterThan(0);
    const probeDefault = searchTuning.recencyProbeRows;
    for (const probeRows of [probeDefault, 0, 50, 5000]) {
      searchTuning.recencyProbeRows = probeRows;
      try {
        for (const [offset, limit] of PAGES) {
          const found = await ids(term, { offset, limit });
          expect(found, `${probeRows} ${offset} ${limit}`).toEqual(expected.slice(offset, offset + limit));
        }
      } finally {
        searchTuning.recencyProbeRows = probeDefault;
      }
    }
  });

  it('the Latin path by recency pages past the superseded rows too', async () => {
    const expected = await bruteForce('shared topic');
    for (const [offset, limit] of PAGES) {
      expect(await ids('"shared topic"', { sort: 'newest', offset, limit })).toEqual(
        expected.slice(offset, offset + limit),
      );
    }
  });

  it('includeInactive pages over every matching row', async () => {
    const expected = await bruteForce('共通', true);
    expect(expected.length).toBe(200);
    for (const [offset, limit] of PAGES) {
      expect(await ids('共通', { includeInactive: true, offset, limit })).toEqual(
        expected.slice(offset, offset + limit),
      );
    }
  });
});

describe('0023 down and up again', () => {
  it('search answers the same with the functions of 0010 and with 0023', async () => {
    const cases: Array<[string, SearchOptions]> = [
      ['共通', {}],
      ['共通の話題', { offset: 20 }],
      ['稀少な単語', { limit: 5 }],
      ['"shared topic"', { sort: 'newest', limit: 30 }],
      ['shared topic', {}],
      ['共通 OR 稀少', { sort: 'oldest' }],
      ['共通', { includeInactive: true, roles: ['user'] }],
    ];
    const answers = () => Promise.all(cases.map(([q, o]) => searchMessages(testDb.db, T, q, o)));
    const before = await answers();
    expect(before.every((page) => page.length > 0)).toBe(true);
    const migrator = new Migrator({ db: testDb.db, provider: migrationProvider });
    const down = await migrator.migrateTo('0022_context_engine');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual([
      ['0028_oversized_tsvector', 'Down', 'Success'],
      ['0027_short_pending_lists', 'Down', 'Success'],
      ['0026_client_compactions', 'Down', 'Success'],
      ['0025_key_notifications', 'Down', 'Success'],
      ['0024_generated_plpgsql', 'Down', 'Success'],
      ['0023_search_cheap_plans', 'Down', 'Success'],
    ]);
    expect(await answers()).toEqual(before);
    expect((await migrateToLatest(testDb.db)).applied).toEqual([
      '0023_search_cheap_plans',
      '0024_generated_plpgsql',
      '0025_key_notifications',
      '0026_client_compactions',
      '0027_short_pending_lists',
      '0028_oversized_tsvector',
    ]);
    expect(await answers()).toEqual(before);
  });
});
