// Row-level security through the store functions: a tenant can neither read nor write another tenant's session; and
// the tenant role itself cannot make PostgreSQL show another tenant's text (error messages, search function, catalogue).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { issueApiKey } from '../../../infra/db/apiKeys.js';
import { commitInPlace, commitRotation, replaceReplayedSummary } from '../../../infra/db/compactionCommit/index.js';
import { getCompaction, listCompactions, updateCompaction } from '../../../infra/db/compactions.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { listMessages, loadRowsByIds, loadTranscript } from '../../../infra/db/messages.js';
import { TENANT_ROLE } from '../../../infra/db/migrations/0001_initial.js';
import { createSession, getSession, newestDescendant } from '../../../infra/db/sessions.js';
import { CompactionNotFoundError, SessionNotFoundError } from '../../../infra/db/storeErrors.js';
import { type TenantTx, withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant, getTenantMarker, setTenantMarker } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import {
  assistant,
  newCompaction,
  type SeededSession,
  seedSession,
  statsFor,
  summaryText,
  toolCall,
  toolResult,
  user,
} from './storeFixtures.js';

let testDb: TestDatabase;
let victim: SeededSession;
let victimCompaction: string;
const A = 'tenant-a';
const B = 'tenant-b';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  victim = await seedSession(testDb.db, A, [user('secret plan'), assistant('noted'), user('go')]);
  victimCompaction = await newCompaction(testDb.db, victim);
  await ensureTenant(testDb.db, { id: B, name: 'B' });
});
afterAll(async () => {
  await testDb?.drop();
});

const stolenCommit = () => ({
  compactionId: victimCompaction,
  expectedRowIds: victim.rows.map((r) => r.id),
  output: [assistant(summaryText('pwned')), user('go')],
  summaryIndex: 0,
  summaryBody: 'pwned',
  fallbackUsed: true,
  stats: statsFor('pwned', true),
});

describe('tenant isolation of the session store', () => {
  it("tenant B cannot read tenant A's session, rows or compactions", async () => {
    expect(await getSession(testDb.db, B, victim.sessionId)).toBeUndefined();
    expect(await loadTranscript(testDb.db, B, victim.sessionId)).toEqual([]);
    expect(await listMessages(testDb.db, B, victim.sessionId, { includeInactive: true })).toEqual([]);
    expect(
      await loadRowsByIds(
        testDb.db,
        B,
        victim.rows.map((r) => r.id),
      ),
    ).toEqual([]);
    expect(await getCompaction(testDb.db, B, victimCompaction)).toBeUndefined();
    expect(await listCompactions(testDb.db, B)).toEqual([]);
    await expect(newestDescendant(testDb.db, B, victim.sessionId)).rejects.toBeInstanceOf(SessionNotFoundError);
  });

  it("tenant B cannot append to, commit into or rotate tenant A's session", async () => {
    await expect(
      appendMessages(testDb.db, B, victim.sessionId, [{ message: user('injected'), idempotencyKey: 'x' }]),
    ).rejects.toBeInstanceOf(SessionNotFoundError);
    // The commit reads the compaction record first (lock order conversation → session → compaction): not found.
    await expect(
      commitInPlace(testDb.db, B, { ...stolenCommit(), sessionId: victim.sessionId }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    await expect(
      commitRotation(testDb.db, B, { ...stolenCommit(), oldSessionId: victim.sessionId, newSessionId: 'b-new' }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    expect(await updateCompaction(testDb.db, B, victimCompaction, { status: 'failed' })).toBeUndefined();
    expect((await loadTranscript(testDb.db, A, victim.sessionId)).map((r) => r.message.content)).toEqual([
      'secret plan',
      'noted',
      'go',
    ]);
    expect((await getCompaction(testDb.db, A, victimCompaction))?.status).toBe('pending');
  });

  it("a session of B with the same id as A's does not open A's compaction to B", async () => {
    await createSession(testDb.db, B, { id: victim.sessionId, conversationId: 'b-conv' });
    await appendMessages(testDb.db, B, victim.sessionId, [{ message: user('b message'), idempotencyKey: 'b1' }]);
    const bRows = await loadTranscript(testDb.db, B, victim.sessionId);
    expect(bRows.map((r) => r.message.content)).toEqual(['b message']);
    await expect(
      commitInPlace(testDb.db, B, {
        ...stolenCommit(),
        sessionId: victim.sessionId,
        expectedRowIds: bRows.map((r) => r.id),
      }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    await expect(
      replaceReplayedSummary(testDb.db, B, {
        compactionId: victimCompaction,
        newSummaryText: 'x',
        newSummaryBody: 'x',
      }),
    ).rejects.toBeInstanceOf(CompactionNotFoundError);
    expect((await loadTranscript(testDb.db, A, victim.sessionId)).map((r) => r.message.content)).toEqual([
      'secret plan',
      'noted',
      'go',
    ]);
  });

  it("the tenant role as B can neither see nor change A's row state (message_state), nor delete its own", async () => {
    const ids = victim.rows.map((r) => r.id);
    const asRole = <T>(fn: (tx: TenantTx) => Promise<T>) => withTenant(testDb.db, B, fn);
    expect(
      await asRole((tx) => tx.selectFrom('message_state').select('message_id').where('tenant_id', '=', A).execute()),
    ).toEqual([]);
    const changed = await asRole((tx) =>
      sql`UPDATE message_state SET active = false, compacted = true WHERE message_id = ANY(${ids}::bigint[])`.execute(
        tx,
      ),
    );
    expect(Number(changed.numAffectedRows)).toBe(0);
    await expect(
      asRole((tx) =>
        sql`INSERT INTO message_state (tenant_id, message_id, session_id, position)
            VALUES (${A}, ${ids[0]!}, ${victim.sessionId}, 99)`.execute(tx),
      ),
    ).rejects.toThrow(/row-level security/);
    const own = await loadTranscript(testDb.db, B, victim.sessionId);
    await expect(
      asRole((tx) => sql`DELETE FROM message_state WHERE message_id = ${own[0]?.id ?? 0}`.execute(tx)),
    ).rejects.toThrow(/permission denied/);
    const state = await sql<{ active: boolean; compacted: boolean }>`
      SELECT active, compacted FROM message_state WHERE tenant_id = ${A} AND message_id = ANY(${ids}::bigint[])`.execute(
      testDb.db,
    );
    expect(state.rows).toEqual(ids.map(() => ({ active: true, compacted: false })));
  });

  it('tenant markers are per tenant', async () => {
    await setTenantMarker(testDb.db, A, 'codex_gpt55_autoraise_notice', '231200');
    expect(await getTenantMarker(testDb.db, A, 'codex_gpt55_autoraise_notice')).toBe('231200');
    expect(await getTenantMarker(testDb.db, B, 'codex_gpt55_autoraise_notice')).toBeUndefined();
  });
});

// Defence in depth inside PostgreSQL (issue #9 §8): the tenant role itself, with app.tenant_id = B, tries to make the
// database show tenant A's text — in an error message of an expression evaluated on A's rows, or in the catalogue.
describe('the tenant role as B cannot make PostgreSQL show A', () => {
  /** Tenant A's text, in every column A has text in; no error or result seen by B may contain this word. */
  const SECRET = 'zebra-confidential-of-A';
  const LEAK = /zebra/i;
  const OWN = 'bee own words';

  beforeAll(async () => {
    const a = await seedSession(testDb.db, A, [
      user(`the ${SECRET} plan`),
      toolCall('call-1', `${SECRET}_tool`, JSON.stringify({ note: SECRET })),
      toolResult('call-1', `result ${SECRET}`, `${SECRET}_tool`),
    ]);
    const compaction = await newCompaction(testDb.db, a);
    await updateCompaction(testDb.db, A, compaction, {
      summary: SECRET,
      focus_topic: SECRET,
      previous_summary: SECRET,
      error: SECRET,
      stats: { ...statsFor(SECRET), note: SECRET },
    });
    await setTenantMarker(testDb.db, A, 'secret_marker', SECRET);
    await issueApiKey(testDb.db, A, SECRET);
    await sql`UPDATE sessions SET title = ${SECRET}, model = ${SECRET} WHERE tenant_id = ${A}`.execute(testDb.db);
    await sql`UPDATE tenants SET name = ${SECRET}, policy = ${JSON.stringify({ note: SECRET })}::jsonb
               WHERE id = ${A}`.execute(testDb.db);
    await sql`INSERT INTO events (tenant_id, session_id, type, payload)
              VALUES (${A}, ${a.sessionId}, 'notice', ${JSON.stringify({ text: SECRET })}::jsonb)`.execute(testDb.db);
    await sql`INSERT INTO turns (tenant_id, id, session_id, conversation_id, model, finish_reason)
              VALUES (${A}, 'turn-1', ${a.sessionId}, ${a.conversationId}, ${SECRET}, ${SECRET})`.execute(testDb.db);
    await seedSession(testDb.db, B, [user(`${OWN} about plans`), assistant(`${OWN} again`)]);
    // Statistics as autovacuum would gather them: the catalogue probe looks for A's text in them.
    await sql`ANALYZE`.execute(testDb.db);
  });

  /** Runs `statement` as B; what it returned, or what PostgreSQL said when it failed (every field of the error). */
  async function asB(statement: (tx: TenantTx) => Promise<unknown>): Promise<{ rows: unknown; error: string }> {
    try {
      return { rows: await withTenant(testDb.db, B, statement), error: '' };
    } catch (err) {
      const e = err as Record<string, unknown>;
      const said = [e.message, e.detail, e.hint, e.where, e.internalQuery, e.schema, e.table, e.column];
      return { rows: [], error: said.filter((v) => typeof v === 'string').join(' | ') };
    }
  }

  /** Every relation (table or view) of the schema the tenant role may read, with its columns. */
  async function readableRelations(): Promise<Map<string, string[]>> {
    const rows = await sql<{ relname: string; attname: string }>`
      SELECT c.relname, a.attname
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
         AND has_column_privilege(${TENANT_ROLE}, c.oid, a.attnum, 'SELECT')
       ORDER BY c.relname, a.attnum`.execute(testDb.db);
    const relations = new Map<string, string[]>();
    for (const r of rows.rows) relations.set(r.relname, [...(relations.get(r.relname) ?? []), r.attname]);
    return relations;
  }

  it("no erroring expression on any relation the tenant role can read shows A's text", async () => {
    const relations = await readableRelations();
    expect([...relations.keys()]).toEqual(
      expect.arrayContaining([
        'messages',
        'message_state',
        'sessions',
        'compactions',
        'events',
        'tenant_markers',
        'turns',
      ]),
    );
    // api_keys is the owner's alone; tenants is probed whatever the grants say.
    expect(relations.has('api_keys')).toBe(false);
    for (const relation of ['api_keys', 'tenants']) if (!relations.has(relation)) relations.set(relation, ['id']);
    const probes: string[] = [];
    for (const [relation, columns] of relations) {
      // Skipping B's own rows (as an attacker would) leaves only other tenants' rows to fail on.
      const owner = columns.includes('tenant_id') ? 'tenant_id' : 'id';
      for (const column of columns) {
        const value = `${sql.id(column).compile(testDb.db).sql}::text`;
        const rel = sql.id(relation).compile(testDb.db).sql;
        probes.push(`SELECT 1 FROM ${rel} WHERE ${value}::boolean`);
        probes.push(
          `SELECT 1 FROM ${rel} WHERE CASE WHEN ${owner}::text = '${B}' THEN false ELSE ${value}::int > 0 END`,
        );
      }
    }
    probes.push(`SELECT 1 FROM messages WHERE CASE WHEN tenant_id = '${B}' THEN false ELSE content::boolean END`);
    probes.push(`SELECT 1 FROM messages WHERE CASE WHEN tenant_id = '${B}' THEN false ELSE indexed_text::int > 0 END`);
    for (const probe of probes) {
      const { rows, error } = await asB((tx) => sql.raw(probe).execute(tx));
      expect(error, probe).not.toMatch(LEAK);
      expect(JSON.stringify(rows), probe).not.toMatch(LEAK);
    }
  });

  /** The search entry point of the tenant role, with a plan as the caller chooses to write it. */
  const search = (plan: Record<string, unknown>, query: string | null = null) =>
    asB(async (tx) => {
      const tsquery = query === null ? sql`NULL::tsquery` : sql`plainto_tsquery('simple', ${query})`;
      return (await sql`SELECT * FROM dc_search_messages(${JSON.stringify(plan)}::jsonb, ${tsquery})`.execute(tx)).rows;
    });
  const cjkPlan = (clause: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
    tenant: B,
    path: 'cjk',
    groups: [[{ kind: 'ilike', grams: [], negated: false, ...clause }]],
    ordering: 'newest',
    includeInactive: true,
    limit: 100,
    offset: 0,
    probeRows: 400,
    ...more,
  });

  it('the search function with crafted plans finds and shows only B', async () => {
    // Every row of B (the empty substring): the function works, and what it returns is B's, all of it.
    const all = await search(cjkPlan({ text: '' }, { ordering: 'oldest' }));
    const bRows = await sql<{ id: number }>`
      SELECT id FROM messages WHERE tenant_id = ${B} ORDER BY "timestamp", id`.execute(testDb.db);
    expect(all.error).toBe('');
    expect((all.rows as Array<{ id: number }>).map((r) => r.id)).toEqual(bRows.rows.map((r) => r.id));
    expect(bRows.rows.length).toBeGreaterThanOrEqual(2);
    const crafted: Array<[Record<string, unknown>, string | null]> = [
      [cjkPlan({ text: 'zebra' }), null],
      [cjkPlan({ text: 'zebra', kind: 'strpos', grams: ['ze'] }), null],
      [cjkPlan({ text: 'zebra' }, { tenant: A }), null],
      [cjkPlan({ text: 'zebra' }, { tenant: null }), null],
      [cjkPlan({ text: "zebra') OR true OR ('" }), null],
      [cjkPlan({ text: 'zebra', kind: "ilike') OR true --" }), null],
      [cjkPlan({ text: "'", kind: 'gram' }, { ordering: 'newest; SELECT 1' }), null],
      [cjkPlan({ text: '' }, { roles: ["user') OR true --"], sources: ["' OR ''='"], excludeSources: ["'"] }), null],
      [cjkPlan({ text: '' }, { limit: '20; SELECT 1' }), null],
      [cjkPlan({ text: '' }, { offset: '0 OR 1=1' }), null],
      [cjkPlan({ text: 'zebra' }, { probeRows: -5, limit: 1e6, offset: -3 }), null],
      [cjkPlan({ text: 'zebra', grams: ["a'}", 'b"'] }), null],
      [{ tenant: B, path: 'latin', ordering: 'rank', limit: 100 }, 'zebra confidential'],
      [{ tenant: B, path: 'latin', ordering: 'oldest', includeInactive: true, limit: 100 }, 'zebra'],
      [{ tenant: A, path: 'latin', ordering: 'rank', limit: 100 }, 'zebra'],
      [{ tenant: B, path: "latin' OR true --", ordering: 'rank' }, 'zebra'],
    ];
    for (const [plan, query] of crafted) {
      const { rows, error } = await search(plan, query);
      expect(error, JSON.stringify(plan)).not.toMatch(LEAK);
      expect(JSON.stringify(rows), JSON.stringify(plan)).not.toMatch(LEAK);
    }
    // An erroring expression on the function's rows sees B's rows only.
    const overResults = await asB((tx) =>
      sql`SELECT 1 FROM dc_search_messages(${JSON.stringify(cjkPlan({ text: '' }))}::jsonb, NULL) r
           WHERE r.indexed_text::int > 0 OR r.prev_content::boolean OR r.next_content::boolean`.execute(tx),
    );
    expect(overResults.error).toMatch(/invalid input syntax/);
    expect(overResults.error).not.toMatch(LEAK);
    // A plan for another tenant, or no tenant setting at all, is refused.
    expect((await search(cjkPlan({ text: '' }, { tenant: A }))).error).toMatch(/app\.tenant_id/);
    const unset = testDb.db.transaction().execute(async (tx) => {
      await sql`SET LOCAL ROLE dc_tenant`.execute(tx);
      await sql`SELECT * FROM dc_search_messages(${JSON.stringify(cjkPlan({ text: '' }))}::jsonb, NULL)`.execute(tx);
    });
    await expect(unset).rejects.toThrow(/app\.tenant_id/);
  });

  it("SELECT * FROM tenants as B shows only B, and no catalogue view shows A's name, policy or text", async () => {
    const tenants = await asB(async (tx) => (await sql`SELECT * FROM tenants`.execute(tx)).rows);
    expect(tenants).toEqual({ rows: [expect.objectContaining({ id: B, name: 'B' })], error: '' });
    // Column statistics (histograms, most common values) of every table the role may read.
    const stats = await asB(
      async (tx) => (await sql`SELECT * FROM pg_stats WHERE schemaname = 'public'`.execute(tx)).rows,
    );
    expect(stats.error).toBe('');
    expect(JSON.stringify(stats.rows)).not.toMatch(LEAK);
    // The statements of other sessions (an owner session whose last statement quoted A's text).
    const other = await testDb.db.connection().execute(async (conn) => {
      await sql`SELECT ${sql.lit(SECRET)} AS owner_statement`.execute(conn);
      return asB(async (tx) => (await sql`SELECT query FROM pg_stat_activity`.execute(tx)).rows);
    });
    expect(other.error).toBe('');
    expect(JSON.stringify(other.rows)).not.toMatch(LEAK);
  });
});
