// CJK path of search (SPEC §14.4, §14.6, §14.7) on the real PostgreSQL: every example of §14, completeness of
// 1–2-character terms against a brute-force scan, escaping, recency order and the index each path uses.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createDb } from '../../../infra/db/connect.js';
import { searchMessages, searchRequest, searchTuning } from '../../../infra/db/search/index.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, seedSession, toolCall, user } from './searchFixtures.js';

let testDb: TestDatabase;
const T = 'tenant-cjk';
const OTHER = 'tenant-cjk-other';
const ids: Record<string, number> = {};

const FILLER_JA = ['今日は良い天気です', '設定ファイルを読み込みました', 'テストが失敗しました', '日本語の文章です'];

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  const named: Array<[string, string]> = [
    ['dabieshan', '我们去大别山旅游'],
    ['agent', 'Agent通信协议的设计'],
    ['percent', '任务 100%完成'],
    ['noPercent', '任务 100完成'],
    ['guangxi', '广西的风景很好'],
    ['guilin', '桂林山水甲天下'],
    ['lijiang', '漓江的水很清'],
    ['compress', 'コンテキストの圧縮を実行しました'],
    ['korean', '기억이 잘 나지 않아요'],
    ['koreanHello', '안녕하세요 여러분'],
    ['underscore', 'file_名前.txt を開く'],
    ['underscoreLike', 'fileX名前.txt を開く'],
    ['mixed', 'hello 世界, deploy finished'],
    ['long', `${'あ'.repeat(100)}目標の単語${'い'.repeat(200)}`],
  ];
  const { ids: seeded } = await seedSession(testDb.db, T, { rows: named.map(([, text]) => user(text)) });
  named.forEach(([name], i) => {
    ids[name] = seeded[i] as number;
  });
  // A tool call whose arguments are Japanese.
  const tool = await seedSession(testDb.db, T, {
    rows: [toolCall('c1', 'write_file', '{"path":"メモ.md","text":"圧縮の結果"}'), assistant('完了')],
  });
  ids.toolArgs = tool.ids[0] as number;
  // Filler so the planner has something to choose between.
  await seedSession(testDb.db, T, {
    rows: Array.from({ length: 400 }, (_, i) => user(`${FILLER_JA[i % FILLER_JA.length]} ${i}`)),
  });
  await seedSession(testDb.db, OTHER, { rows: [user('我们去大别山旅游'), user('コンテキストの圧縮')] });
  await sql`VACUUM ANALYZE messages`.execute(testDb.db);
});
afterAll(async () => {
  await testDb?.drop();
});

const search = (query: unknown, options = {}) => searchMessages(testDb.db, T, query, options);
const idsOf = async (query: string, options = {}) => (await search(query, options)).map((r) => r.id);

describe('SPEC §14.6 examples', () => {
  it('我们去大别山旅游 is found by 大别山, with the §14.7 snippet', async () => {
    const results = await search('大别山');
    expect(results.map((r) => r.id)).toEqual([ids.dabieshan]);
    expect(results[0]?.snippet).toBe('我们去>>>大别山<<<旅游');
  });

  it('Agent通信协议 is found by Agent通信 (case-insensitive too)', async () => {
    expect(await idsOf('Agent通信')).toEqual([ids.agent]);
    expect(await idsOf('agent通信')).toEqual([ids.agent]);
    expect((await search('AGENT通信'))[0]?.snippet).toBe('>>>Agent通信<<<协议的设计');
  });

  it('100%完成 finds only the message with the literal percent sign', async () => {
    expect(await idsOf('100%完成')).toEqual([ids.percent]);
    expect((await idsOf('100完成')).sort()).toEqual([ids.noPercent]);
  });

  it('广西 OR 桂林 OR 漓江 finds one message per term', async () => {
    const found = await idsOf('广西 OR 桂林 OR 漓江');
    expect(found.sort((a, b) => a - b)).toEqual([ids.guangxi, ids.guilin, ids.lijiang].sort((a, b) => a! - b!));
  });

  it('a message containing コンテキストの圧縮 is found by 圧縮 (and so are the tool arguments)', async () => {
    const found = await idsOf('圧縮');
    expect(found).toContain(ids.compress);
    expect(found).toContain(ids.toolArgs);
    expect(found).toHaveLength(2);
  });

  it('Korean: 2-character and longer Hangul terms', async () => {
    expect(await idsOf('기억')).toEqual([ids.korean]);
    expect(await idsOf('안녕하세요')).toEqual([ids.koreanHello]);
    expect(await idsOf('여러분')).toEqual([ids.koreanHello]);
  });

  it('a single CJK character finds every row that contains it', async () => {
    expect(await idsOf('桂')).toEqual([ids.guilin]);
  });
});

describe('escaping and terms', () => {
  it('_ is literal, not a LIKE wildcard', async () => {
    expect(await idsOf('file_名前')).toEqual([ids.underscore]);
  });

  it('a mixed query takes the CJK path; Latin words are substrings there', async () => {
    expect(await idsOf('hello 世界')).toEqual([ids.mixed]);
    expect(await idsOf('deploy 世界')).toEqual([ids.mixed]);
    expect(await idsOf('hello 世界 NOT deploy')).toEqual([]);
  });

  it('NOT excludes rows on the CJK path', async () => {
    expect(await idsOf('广西 OR 桂林 NOT 山水')).toEqual([ids.guangxi]);
  });

  it('a trailing * is ignored on the CJK path', async () => {
    expect(await idsOf('大别*')).toEqual([ids.dabieshan]);
  });

  it('a quoted phrase with spaces matches its text', async () => {
    expect(await idsOf('"안녕하세요여러분"')).toEqual([]);
    expect(await idsOf('"안녕하세요   여러분"')).toEqual([ids.koreanHello]);
  });

  it('the tool arguments are searchable', async () => {
    expect(await idsOf('メモ')).toEqual([ids.toolArgs]);
  });

  it('a match far into the text gets 40 characters before and ... on both sides', async () => {
    const [result] = await search('目標の単語');
    expect(result?.snippet).toBe(`...${'あ'.repeat(40)}>>>目標の単語<<<${'い'.repeat(75)}...`);
  });

  it('no CJK result comes from another tenant', async () => {
    const other = await searchMessages(testDb.db, OTHER, '大别山');
    expect(other).toHaveLength(1);
    expect(other[0]?.id).not.toBe(ids.dabieshan);
    expect(await idsOf('大别山')).toEqual([ids.dabieshan]);
  });
});

describe('recency order and completeness', () => {
  it('relevance on the CJK path is timestamp desc, id desc', async () => {
    const results = await search('天気', { limit: 100 });
    const stamps = results.map((r) => r.timestamp);
    expect(stamps).toEqual([...stamps].sort().reverse());
    expect(results.length).toBe(100);
  });

  it('1–2-character terms return every matching row (compared with a brute-force scan)', async () => {
    for (const term of ['天気', '失', 'ファ', '文', '完成', '圧縮', '了']) {
      const expected = await withTenant(testDb.db, T, async (tx) =>
        (
          await sql<{ id: number }>`
            SELECT m.id FROM messages m JOIN message_state s ON s.message_id = m.id
             WHERE position(${term} IN m.indexed_text) > 0 AND (s.active OR s.compacted)
             ORDER BY m."timestamp" DESC, m.id DESC`.execute(tx)
        ).rows.map((r) => r.id),
      );
      const found: number[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await idsOf(term, { limit: 100, offset });
        found.push(...page);
        if (page.length < 100) break;
      }
      expect(found, term).toEqual(expected);
    }
  });
});

describe('indexes (the plans the search builds)', () => {
  /** The plan of the statement dc_search_messages runs for `query`, explained as the owner, as the function runs it. */
  async function plan(query: string): Promise<string> {
    const request = searchRequest(T, query);
    if (!request) throw new Error(`nothing to search in ${query}`);
    return testDb.db.transaction().execute(async (tx) => {
      await sql`SET LOCAL enable_seqscan = off`.execute(tx);
      const built = await sql<{ statement: string }>`
        SELECT dc_search_sql(${JSON.stringify(request.plan)}::jsonb, ${T}) AS statement`.execute(tx);
      const rows = await sql<{ 'QUERY PLAN': string }>`EXPLAIN ${sql.raw(built.rows[0]?.statement ?? '')}`.execute(tx);
      return rows.rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }
  /** The index conditions `index` is scanned with in `text` (a plan). */
  const conditions = (text: string, index: string) =>
    Array.from(text.matchAll(new RegExp(`on ${index} .*\\n\\s*Index Cond: (.*)`, 'g')), (m) => m[1]);

  it('a 2-character CJK term can use the CJK gram index', async () => {
    expect(conditions(await plan('圧縮'), 'messages_search_cjk')).toContainEqual(
      expect.stringContaining("cjk_grams @> '{圧縮}'"),
    );
  });

  it('a 3-character term can use the trigram index', async () => {
    // `dep` has no CJK character, so its clause is ILIKE alone (CJK terms are prefiltered by their grams).
    expect(conditions(await plan('世界 OR dep'), 'messages_search_trgm')).toContainEqual(
      expect.stringContaining("indexed_text ~~* '%dep%'"),
    );
  });

  it('a search is one statement of its own: its tenant and read-only settings end with it', async () => {
    // One connection, so the reads after each search see what the search left on it.
    const single = createDb({ connectionString: testDb.url, maxConnections: 1 });
    try {
      for (const [tenant, term, expected] of [
        [T, '桂林', [ids.guilin]],
        [OTHER, '桂林', []],
        [T, '漓江', [ids.lijiang]],
      ] as const) {
        expect((await searchMessages(single, tenant, term)).map((r) => r.id)).toEqual(expected);
        const { rows } = await sql<{ tenant: string | null; readOnly: string }>`
          SELECT current_setting('app.tenant_id', true) AS tenant,
                 current_setting('transaction_read_only') AS "readOnly"`.execute(single);
        expect(rows[0]?.tenant ?? '').toBe('');
        expect(rows[0]?.readOnly).toBe('off');
      }
      // In a transaction the settings would outlive the statement: refused before anything is sent.
      await expect(single.transaction().execute((tx) => searchMessages(tx, T, '桂林'))).rejects.toThrow(
        /statement of its own/,
      );
    } finally {
      await single.destroy();
    }
  });
});

describe('a tenant larger than the recency probe', () => {
  const BIG = 'tenant-cjk-big';
  const DEFAULT_PROBE_ROWS = searchTuning.recencyProbeRows;
  beforeAll(async () => {
    const rows = Array.from({ length: 1500 }, (_, i) => {
      if (i % 7 === 0) return user(`共通の話題 ${i}`);
      if (i === 3 || i === 700 || i === 1490) return user(`稀少な単語 ${i}`);
      return user(`普通の文 ${i}`);
    });
    await seedSession(testDb.db, BIG, { rows });
    await seedSession(testDb.db, BIG, {
      rows: Array.from({ length: 20 }, (_, i) => ({ message: user(`共通の話題 superseded ${i}`), active: false })),
    });
    await sql`ANALYZE messages`.execute(testDb.db);
  });

  async function bruteForce(term: string, order: 'DESC' | 'ASC'): Promise<number[]> {
    return withTenant(testDb.db, BIG, async (tx) =>
      (
        await sql<{ id: number }>`
          SELECT m.id FROM messages m JOIN message_state s ON s.message_id = m.id
           WHERE position(${term} IN m.indexed_text) > 0 AND (s.active OR s.compacted)
           ORDER BY m."timestamp" ${sql.raw(order)}, m.id ${sql.raw(order)}`.execute(tx)
      ).rows.map((r) => r.id),
    );
  }

  it.each([
    ['共通', 'newest'],
    ['共通', 'oldest'],
    ['共通の話題', 'relevance'],
    ['稀少', 'relevance'],
    ['稀少な単語', 'oldest'],
    ['文', 'newest'],
  ] as const)('%s (%s): pages equal a brute-force scan, with and without the probe', async (term, sort) => {
    const expected = await bruteForce(term, sort === 'oldest' ? 'ASC' : 'DESC');
    expect(expected.length).toBeGreaterThan(0);
    // 5000: the probe's window holds the whole tenant (1,520 rows), so its answer is complete without the search.
    for (const probeRows of [DEFAULT_PROBE_ROWS, 0, 50, 5000]) {
      searchTuning.recencyProbeRows = probeRows;
      try {
        for (const [offset, limit] of [
          [0, 20],
          [20, 20],
          [0, 100],
          [95, 5],
          [150, 30],
        ] as const) {
          const found = (await searchMessages(testDb.db, BIG, term, { sort, offset, limit })).map((r) => r.id);
          expect(found, `${probeRows} ${offset} ${limit}`).toEqual(expected.slice(offset, offset + limit));
        }
      } finally {
        searchTuning.recencyProbeRows = DEFAULT_PROBE_ROWS;
      }
    }
  });
});
