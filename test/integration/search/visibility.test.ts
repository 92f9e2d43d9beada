// Search visibility, tenant isolation, filters, sort, paging and result fields (SPEC §14.1, §14.8, §14.9).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type SearchResult, searchMessages } from '../../../infra/db/search/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, seedSession, toolCall, toolResult, user } from './searchFixtures.js';

let testDb: TestDatabase;
const A = 'tenant-a';
const B = 'tenant-b';

/** Session 1 of tenant A: archived, superseded and active rows around a summary, CJK and Latin. */
let s1: { sessionId: string; ids: number[] };
let cli: { sessionId: string; ids: number[] };
let web: { sessionId: string; ids: number[] };
let telegram: { sessionId: string; ids: number[] };
let bRow: { sessionId: string; ids: number[] };

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  s1 = await seedSession(testDb.db, A, {
    source: 'cli',
    model: 'gpt-5',
    rows: [
      { message: user('archived note about the marmot migration'), active: false, compacted: true },
      { message: assistant('superseded marmot draft'), active: false, compacted: false },
      { message: user('[CONTEXT COMPACTION] summary mentions the marmot'), active: true },
      { message: user([{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }]), active: true },
      { message: assistant('active marmot answer 圧縮済み'), active: true },
      {
        message: user([
          { type: 'text', text: 'part one' },
          { type: 'text', text: 'x'.repeat(300) },
        ]),
      },
      { message: toolCall('c1', 'shell', '{"cmd":"ls"}'), active: false, compacted: false },
    ],
  });
  cli = await seedSession(testDb.db, A, {
    source: 'cli',
    rows: [user('walrus one'), assistant('walrus two'), user('walrus three')],
  });
  web = await seedSession(testDb.db, A, {
    source: 'web',
    model: null,
    rows: [user('walrus four'), assistant('walrus five')],
  });
  telegram = await seedSession(testDb.db, A, {
    source: 'telegram',
    rows: [user('walrus six'), toolCall('c2', 'search', '{"q":"walrus"}'), toolResult('c2', 'walrus seven', 'search')],
  });
  bRow = await seedSession(testDb.db, B, {
    rows: [user('archived note about the marmot migration'), user('walrus one'), user('active marmot answer 圧縮済み')],
  });
  await sql`VACUUM ANALYZE messages`.execute(testDb.db);
});
afterAll(async () => {
  await testDb?.drop();
});

const ids = (results: SearchResult[]) => results.map((r) => r.id);

describe('visibility (SPEC §14.1)', () => {
  it('archived (compacted) rows are found; superseded ones are not', async () => {
    const found = ids(await searchMessages(testDb.db, A, 'marmot'));
    expect(found).toContain(s1.ids[0]);
    expect(found).toContain(s1.ids[2]);
    expect(found).toContain(s1.ids[4]);
    expect(found).not.toContain(s1.ids[1]);
    expect(found).toHaveLength(3);
  });

  it('includeInactive adds superseded rows', async () => {
    const found = ids(await searchMessages(testDb.db, A, 'marmot', { includeInactive: true }));
    expect(found).toContain(s1.ids[1]);
    expect(found).toHaveLength(4);
  });

  it('the same on the CJK path', async () => {
    expect(ids(await searchMessages(testDb.db, A, '圧縮'))).toEqual([s1.ids[4]]);
  });
});

describe('tenant isolation', () => {
  it('a row with the same text in another tenant is never returned', async () => {
    for (const query of ['marmot', 'walrus', 'archived note', '圧縮', '圧縮済み', 'marmot OR walrus']) {
      for (const includeInactive of [false, true]) {
        const a = await searchMessages(testDb.db, A, query, { includeInactive, limit: 100 });
        expect(
          a.some((r) => bRow.ids.includes(r.id)),
          query,
        ).toBe(false);
        const b = await searchMessages(testDb.db, B, query, { includeInactive, limit: 100 });
        expect(
          b.every((r) => bRow.ids.includes(r.id)),
          query,
        ).toBe(true);
        expect(b.length).toBeGreaterThan(0);
      }
    }
  });

  it('a tenant with no rows finds nothing', async () => {
    expect(await searchMessages(testDb.db, 'tenant-none', 'marmot')).toEqual([]);
  });
});

describe('result fields and context (SPEC §14.8)', () => {
  it('has every field, ISO timestamps, session source and model', async () => {
    const [result] = await searchMessages(testDb.db, A, 'superseded', { includeInactive: true });
    expect(result).toMatchObject({
      id: s1.ids[1],
      session_id: s1.sessionId,
      role: 'assistant',
      snippet: '>>>superseded<<< marmot draft',
      tool_name: null,
      source: 'cli',
      model: 'gpt-5',
    });
    expect(result?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(result?.session_started).toMatch(/Z$/);
    expect(Object.keys(result ?? {}).sort()).toEqual(
      [
        'context',
        'id',
        'model',
        'role',
        'session_id',
        'session_started',
        'snippet',
        'source',
        'timestamp',
        'tool_name',
      ].sort(),
    );
  });

  it('context: the previous and next visible rows of the session, multimodal and long text handled', async () => {
    const [active] = await searchMessages(testDb.db, A, 'active marmot');
    expect(active?.id).toBe(s1.ids[4]);
    expect(active?.context).toEqual([
      { role: 'user', content: '[multimodal content]' },
      { role: 'user', content: `part one ${'x'.repeat(191)}` },
    ]);
  });

  it('context skips superseded rows unless includeInactive', async () => {
    const [summary] = await searchMessages(testDb.db, A, 'summary mentions');
    expect(summary?.context).toEqual([
      { role: 'user', content: 'archived note about the marmot migration' },
      { role: 'user', content: '[multimodal content]' },
    ]);
    const [withInactive] = await searchMessages(testDb.db, A, 'summary mentions', { includeInactive: true });
    expect(withInactive?.context[0]).toEqual({ role: 'assistant', content: 'superseded marmot draft' });
  });

  it('a missing neighbour is omitted; null content reads as empty text', async () => {
    const [first] = await searchMessages(testDb.db, A, 'archived note');
    expect(first?.context).toEqual([{ role: 'user', content: '[CONTEXT COMPACTION] summary mentions the marmot' }]);
    const [six] = await searchMessages(testDb.db, A, 'six');
    expect(six?.context).toEqual([{ role: 'assistant', content: '' }]);
  });
});

describe('filters, sort and paging (SPEC §14.9)', () => {
  const walrusIds = () => [...cli.ids, ...web.ids, telegram.ids[0], telegram.ids[1], telegram.ids[2]];

  it('sources and excludeSources', async () => {
    const onlyWeb = await searchMessages(testDb.db, A, 'walrus', { sources: ['web'] });
    expect(ids(onlyWeb).sort()).toEqual([...web.ids].sort());
    expect(onlyWeb.every((r) => r.source === 'web' && r.model === null)).toBe(true);
    const notCli = await searchMessages(testDb.db, A, 'walrus', { excludeSources: ['cli', 'telegram'] });
    expect(ids(notCli).sort()).toEqual([...web.ids].sort());
    const both = await searchMessages(testDb.db, A, 'walrus', { sources: ['web', 'cli'], excludeSources: ['cli'] });
    expect(ids(both).sort()).toEqual([...web.ids].sort());
  });

  it('roles', async () => {
    const tools = await searchMessages(testDb.db, A, 'walrus', { roles: ['tool'] });
    expect(ids(tools)).toEqual([telegram.ids[2]]);
    expect(tools[0]?.tool_name).toBe('search');
    const assistants = await searchMessages(testDb.db, A, 'walrus', { roles: ['assistant'] });
    expect(ids(assistants).sort()).toEqual([cli.ids[1], web.ids[1], telegram.ids[1]].sort());
  });

  it('sort newest and oldest', async () => {
    const all = walrusIds() as number[];
    const newest = await searchMessages(testDb.db, A, 'walrus', { sort: 'newest' });
    expect(ids(newest)).toEqual([...all].reverse());
    const oldest = await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest' });
    expect(ids(oldest)).toEqual(all);
  });

  it('paging: limit and offset after ordering; clamps', async () => {
    const all = walrusIds() as number[];
    expect(ids(await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest', limit: 3, offset: 2 }))).toEqual(
      all.slice(2, 5),
    );
    expect(await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest', limit: 0 })).toHaveLength(1);
    expect(await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest', limit: -5 })).toHaveLength(1);
    expect(await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest', limit: 1000 })).toHaveLength(all.length);
    expect(ids(await searchMessages(testDb.db, A, 'walrus', { sort: 'oldest', limit: 2, offset: -10 }))).toEqual(
      all.slice(0, 2),
    );
    expect(await searchMessages(testDb.db, A, 'walrus', { offset: 100 })).toEqual([]);
  });

  it('limit is clamped to 100', async () => {
    const rows = Array.from({ length: 130 }, (_, i) => user(`capybara ${i}`));
    await seedSession(testDb.db, A, { rows });
    expect(await searchMessages(testDb.db, A, 'capybara', { limit: 500 })).toHaveLength(100);
    expect(await searchMessages(testDb.db, A, 'capybara')).toHaveLength(20);
    expect(await searchMessages(testDb.db, A, 'capybara', { offset: 120, limit: 100 })).toHaveLength(10);
  });
});
