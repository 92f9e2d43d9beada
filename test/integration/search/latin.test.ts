// Latin path of search (SPEC §14.5, §14.7) on the real PostgreSQL: ranking, snippets, phrases, prefixes, NOT,
// compound terms, tool names and arguments, words inside paths, unsearchable queries and very long queries.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { searchMessages } from '../../../infra/db/search/index.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, seedSession, toolCall, toolResult, user } from './searchFixtures.js';

let testDb: TestDatabase;
const T = 'tenant-latin';
const ids: Record<string, number> = {};

const LONG_PREFIX = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  const named: Array<[string, ReturnType<typeof user>]> = [
    ['deployOnce', user('We should deploy the service tomorrow')],
    ['deployMany', user('deploy deploy deploy: the deploy pipeline deploys on every merge')],
    ['deployed', assistant('The service was deployed at noon')],
    ['exact', user('this is the exact phrase we want')],
    ['scrambled', user('phrase exact, this is not the one')],
    ['config', user('edit my-app.config.ts and restart')],
    ['configSpaced', user('the app config ts is elsewhere')],
    ['chat', user('the chat-send endpoint returns 500')],
    ['cursor', user('panic in src/cursor.rs at line 42')],
    ['todo', user('TODO: fix the flaky test')],
    ['cafe', user('Meet at the Café on Monday')],
    ['long', user(`${LONG_PREFIX} needle ${LONG_PREFIX}`)],
    ['kubeResult', toolResult('c9', 'pod/flamingo restarted', 'shell')],
    ['android', user('Android builds are green')],
  ];
  const seeded = await seedSession(testDb.db, T, { rows: named.map(([, m]) => m) });
  named.forEach(([name], i) => {
    ids[name] = seeded.ids[i] as number;
  });
  const tools = await seedSession(testDb.db, T, {
    rows: [
      toolCall('c1', 'shell', '{"cmd":"kubectl rollout restart deployment/web"}'),
      toolResult('c1', 'deployment.apps/web restarted', 'read_logs'),
    ],
  });
  ids.kubectlCall = tools.ids[0] as number;
  ids.toolNamed = tools.ids[1] as number;
  await sql`VACUUM ANALYZE messages`.execute(testDb.db);
});
afterAll(async () => {
  await testDb?.drop();
});

const search = (query: unknown, options = {}) => searchMessages(testDb.db, T, query, options);
const idsOf = async (query: unknown, options = {}) => (await search(query, options)).map((r) => r.id);
const sorted = (values: Array<number | undefined>) => [...values].sort((a, b) => (a ?? 0) - (b ?? 0));

describe('matching', () => {
  it('is case-insensitive', async () => {
    expect(await idsOf('ANDROID')).toEqual([ids.android]);
    expect(await idsOf('café')).toEqual([ids.cafe]);
    expect(await idsOf('CAFÉ')).toEqual([ids.cafe]);
  });

  it('plain terms are AND-ed', async () => {
    expect(await idsOf('deploy tomorrow')).toEqual([ids.deployOnce]);
  });

  it('OR and NOT', async () => {
    expect(sorted(await idsOf('tomorrow OR noon'))).toEqual(sorted([ids.deployOnce, ids.deployed]));
    expect(await idsOf('deploy NOT tomorrow')).toEqual([ids.deployMany]);
  });

  it('lower-case and/or/not are ordinary terms', async () => {
    expect(await idsOf('deploy or tomorrow')).toEqual([]);
  });

  it('a prefix term matches words starting with it', async () => {
    expect(sorted(await idsOf('deploy*'))).toEqual(
      sorted([ids.deployOnce, ids.deployMany, ids.deployed, ids.kubectlCall, ids.toolNamed]), // deployment/web
    );
    expect(sorted(await idsOf('deploy'))).toEqual(sorted([ids.deployOnce, ids.deployMany]));
  });

  it('a quoted phrase matches the words in order only', async () => {
    expect(await idsOf('"exact phrase"')).toEqual([ids.exact]);
    expect(sorted(await idsOf('exact phrase'))).toEqual(sorted([ids.exact, ids.scrambled]));
  });

  it('a quoted phrase with a trailing star is a prefix on its last word', async () => {
    expect(await idsOf('"the service was depl*"')).toEqual([ids.deployed]);
  });

  it('compound terms are phrases: my-app.config.ts and chat-send', async () => {
    expect(await idsOf('my-app.config.ts')).toContain(ids.config);
    expect(await idsOf('my-app.config.ts')).not.toContain(ids.configSpaced);
    expect(await idsOf('chat-send')).toEqual([ids.chat]);
    expect(await idsOf('send-chat')).toEqual([]);
  });

  it('words inside paths and dotted names are found', async () => {
    expect(await idsOf('cursor')).toEqual([ids.cursor]);
    expect(await idsOf('cursor.rs')).toEqual([ids.cursor]);
    expect(await idsOf('src/cursor.rs')).toEqual([ids.cursor]);
    expect(await idsOf('rs')).toEqual([ids.cursor]);
  });

  it('TODO: fix → TODO AND fix', async () => {
    expect(await idsOf('TODO: fix')).toEqual([ids.todo]);
  });

  it('tool names and call arguments are searchable', async () => {
    expect(await idsOf('kubectl')).toEqual([ids.kubectlCall]);
    expect(await idsOf('rollout restart')).toEqual([ids.kubectlCall]);
    expect(await idsOf('read_logs')).toEqual([ids.toolNamed]);
    const [call] = await search('kubectl');
    expect(call?.role).toBe('assistant');
    expect(call?.snippet).toContain('>>>kubectl<<<');
  });

  it('returns tool_name for tool rows', async () => {
    const [row] = await search('flamingo');
    expect(row?.tool_name).toBe('shell');
  });
});

describe('ranking', () => {
  it('ts_rank_cd first: the message with more occurrences ranks higher', async () => {
    const found = await idsOf('deploy');
    expect(found[0]).toBe(ids.deployMany);
  });

  it('equal rank: newest first, then id desc', async () => {
    const a = await seedSession(testDb.db, T, { rows: [user('zebra crossing')] });
    const b = await seedSession(testDb.db, T, { rows: [user('zebra crossing')] });
    const stamp = new Date('2024-06-01T00:00:00Z');
    await sql`UPDATE messages SET "timestamp" = ${stamp} WHERE id = ANY(${[a.ids[0], b.ids[0]]}::bigint[])`.execute(
      testDb.db,
    );
    const c = await seedSession(testDb.db, T, { rows: [user('zebra crossing')] });
    expect(await idsOf('zebra')).toEqual([c.ids[0], b.ids[0], a.ids[0]]);
  });
});

describe('the two ways a Latin search is run (migrations/0010)', () => {
  // A search by rank without role or source filters runs a static statement whose plan the connection keeps; any
  // filter makes dc_search_sql build the statement for the query. A filter that lets every row through must not change
  // a single result, page or neighbour.
  const EVERY_ROLE = { roles: ['user', 'assistant', 'tool', 'system'] };
  it.each(['deploy', 'deploy OR restarted', 'service -noon', 'restart*', '"exact phrase"'])(
    '%s: same pages, same neighbours',
    async (query) => {
      for (const page of [{}, { limit: 2 }, { offset: 1, limit: 2 }, { offset: 50 }]) {
        const fixed = await search(query, page);
        const planned = await search(query, { ...page, ...EVERY_ROLE });
        expect(planned, JSON.stringify(page)).toEqual(fixed);
      }
      expect((await search(query)).length).toBeGreaterThan(0);
    },
  );

  it('superseded rows stay out unless includeInactive, on both', async () => {
    const gone = await seedSession(testDb.db, T, { rows: [{ message: user('narwhal sighting'), active: false }] });
    for (const extra of [{}, EVERY_ROLE]) {
      expect(await idsOf('narwhal', extra)).toEqual([]);
      expect(await idsOf('narwhal', { ...extra, includeInactive: true })).toEqual([gone.ids[0]]);
    }
  });
});

describe('snippets', () => {
  it('wraps every matched word with >>> <<<, keeping its case, whole text when short', async () => {
    const [result] = await search('tomorrow service');
    expect(result?.snippet).toBe('We should deploy the >>>service<<< >>>tomorrow<<<');
  });

  it('prefix matches are wrapped', async () => {
    const results = await search('deploy*');
    const deployed = results.find((r) => r.id === ids.deployed);
    expect(deployed?.snippet).toBe('The service was >>>deployed<<< at noon');
  });

  it('at most 40 words around the match, ... on the cut sides', async () => {
    const [result] = await search('needle');
    const snippet = result?.snippet ?? '';
    expect(snippet.startsWith('...')).toBe(true);
    expect(snippet.endsWith('...')).toBe(true);
    expect(snippet).toContain('>>>needle<<<');
    const words = snippet
      .replace(/\.\.\./g, ' ')
      .trim()
      .split(/\s+/);
    expect(words.length).toBeLessThanOrEqual(40);
    expect(snippet).toContain('word59 >>>needle<<< word0');
  });

  it('words inside a path are highlighted in place', async () => {
    const [result] = await search('cursor');
    expect(result?.snippet).toBe('panic in src/>>>cursor<<<.rs at line 42');
  });
});

describe('queries that cannot be searched give []', () => {
  it.each([undefined, null, 42, '', '   ', '***', '""', '"   "', 'AND OR NOT', '(((', '€', '!!!'])(
    '%j',
    async (query) => {
      expect(await search(query)).toEqual([]);
    },
  );

  it('a group whose only positive term has no lexeme is dropped', async () => {
    expect(await search('€ NOT deploy')).toEqual([]);
    expect(await idsOf('€ NOT deploy OR android')).toEqual([ids.android]);
  });

  it('tsquery syntax in the query is just text', async () => {
    expect(await search("deploy:* & !tomorrow | 'x'")).toEqual(
      await search('deploy tomorrow x'), // specials become spaces; `!` too
    );
    expect(await idsOf('deploy <-> tomorrow')).toEqual([ids.deployOnce]);
  });

  it('a 10,000-character query is cut and completes quickly', async () => {
    const query = Array.from({ length: 10_000 }, (_, i) => 'abcdefghij'[i % 10]).join('');
    const words = 'tomorrow OR noon OR '.repeat(500).slice(0, 10_000);
    const started = Date.now();
    expect(await search(query)).toEqual([]);
    const found = await idsOf(words);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(sorted(found)).toEqual(sorted([ids.deployOnce, ids.deployed]));
  });
});
