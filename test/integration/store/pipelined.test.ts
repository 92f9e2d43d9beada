// Statements queued in a transaction (`pipelined`, infra/db/pipelinedTransactions.ts): they travel in the flight of
// the transaction's next statement or of its COMMIT, in order; a failure among them fails the transaction, and one
// never sent is never run. The conversation log's append is built on them: two flights whatever the batch
// (infra/db/conversationAppend.ts), with everything it stored read back exactly.
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { commitRotation } from '../../../infra/db/compactionCommit/index.js';
import { createCompactionRecord } from '../../../infra/db/compactions.js';
import { createDb } from '../../../infra/db/connect.js';
import { appendToConversation } from '../../../infra/db/conversationAppend.js';
import { getConversation, recordApplied } from '../../../infra/db/conversations.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { type PipelinedStatement, pipelined } from '../../../infra/db/queuedStatements.js';
import type { Database } from '../../../infra/db/schema.js';
import { type TenantTx, withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant, setTenantPolicy } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { countingWrites } from '../../support/harness/socketWrites.js';
import { assistant, newConversation, statsFor, summaryText, uniqueId, user } from './storeFixtures.js';

let testDb: TestDatabase;
/** One connection, opened before anything is counted: every statement is written as it is submitted. */
let single: Kysely<Database>;
const A = 'queued-a';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  await ensureTenant(testDb.db, { id: A, name: A });
  single = createDb({ connectionString: testDb.url, maxConnections: 1 });
  await sql`SELECT 1`.execute(single);
});
afterAll(async () => {
  await single?.destroy();
  await testDb?.drop();
});

const insertMarker = (tx: Kysely<Database>, key: string, value: string) =>
  sql<{ value: string }>`
    INSERT INTO tenant_markers (tenant_id, key, value) VALUES (${A}, ${key}, ${value}) RETURNING value`.compile(tx);

const markers = async (key: string) =>
  (await sql<{ value: string }>`SELECT value FROM tenant_markers WHERE key = ${key} ORDER BY value`.execute(single))
    .rows;

const tenantNow = async (db: Kysely<Database> | TenantTx) =>
  (
    await sql<{ tenant: string | null }>`SELECT nullif(current_setting('app.tenant_id', true), '') AS tenant`.execute(
      db,
    )
  ).rows[0]?.tenant;

describe('statements queued in a transaction', () => {
  it('travel with the next statement, in order, and their results come with it', async () => {
    const key = uniqueId('next');
    const { result, writes } = await countingWrites(() =>
      withTenant(single, A, async (tx) => {
        await tenantNow(tx);
        const insert = await pipelined(tx, insertMarker(tx, key, 'queued'));
        const count = await pipelined(
          tx,
          sql<{ n: number }>`SELECT count(*)::int AS n FROM tenant_markers WHERE key = ${key}`.compile(tx),
        );
        const seen = await sql<{ value: string }>`SELECT value FROM tenant_markers WHERE key = ${key}`.execute(tx);
        return { insert: (await insert.result).rows, count: (await count.result).rows, seen: seen.rows };
      }),
    );
    expect(result).toEqual({ insert: [{ value: 'queued' }], count: [{ n: 1 }], seen: [{ value: 'queued' }] });
    // The prelude with the first statement; the two queued with the third; the COMMIT.
    expect(writes.length).toBe(3);
    expect(await markers(key)).toEqual([{ value: 'queued' }]);
  });

  it('travel with the COMMIT: a transaction of queued statements alone is one flight, run as the tenant', async () => {
    const key = uniqueId('commit');
    const { result, writes } = await countingWrites(() =>
      withTenant(single, A, async (tx) => ({
        insert: await pipelined(tx, insertMarker(tx, key, 'committed')),
        tenant: await pipelined(
          tx,
          sql<{ tenant: string; role: string }>`
            SELECT current_setting('app.tenant_id') AS tenant, current_user AS role`.compile(tx),
        ),
      })),
    );
    expect(writes.length).toBe(1);
    expect((await result.insert.result).rows).toEqual([{ value: 'committed' }]);
    expect((await result.tenant.result).rows).toEqual([{ tenant: A, role: 'dc_tenant' }]);
    expect(await markers(key)).toEqual([{ value: 'committed' }]);
    expect(await tenantNow(single)).toBeNull();
  });

  it('one that fails fails the transaction at its COMMIT: nothing of it is stored', async () => {
    const key = uniqueId('fails');
    let first: PipelinedStatement<{ value: string }> | undefined;
    let failing: PipelinedStatement<unknown> | undefined;
    const attempt = withTenant(single, A, async (tx) => {
      await tenantNow(tx);
      first = await pipelined(tx, insertMarker(tx, key, 'rolled back'));
      failing = await pipelined(tx, sql`SELECT 1 / 0`.compile(tx));
    });
    await expect(attempt).rejects.toThrow(/division by zero/);
    // The insert ran, and was rolled back with its transaction.
    expect((await first!.result).rows).toEqual([{ value: 'rolled back' }]);
    await expect(failing!.result).rejects.toThrow(/division by zero/);
    expect(await markers(key)).toEqual([]);
    expect(await tenantNow(single)).toBeNull();
  });

  it('one whose transaction ends before its flight is never sent, and says so', async () => {
    const key = uniqueId('never');
    let queued: PipelinedStatement<{ value: string }> | undefined;
    const attempt = withTenant(single, A, async (tx) => {
      await tenantNow(tx);
      queued = await pipelined(tx, insertMarker(tx, key, 'never'));
      throw new Error('boom');
    });
    await expect(attempt).rejects.toThrow('boom');
    await expect(queued!.result).rejects.toThrow(/not sent/);
    expect(await markers(key)).toEqual([]);
  });

  it('reading a result before its flight throws at once, where awaiting it would wait forever', async () => {
    const key = uniqueId('early');
    const attempt = withTenant(single, A, async (tx) => {
      const queued = await pipelined(tx, insertMarker(tx, key, 'early'));
      return queued.result;
    });
    await expect(attempt).rejects.toThrow(/read before the flight it travels in was sent/);
    expect(await markers(key)).toEqual([]);
    expect(await tenantNow(single)).toBeNull();
  });

  it('outside a transaction, one runs at once', async () => {
    const { writes, result } = await countingWrites(() =>
      pipelined(single, sql<{ n: number }>`SELECT 41 + 1 AS n`.compile(single)),
    );
    expect(writes.length).toBe(1);
    expect((await result.result).rows).toEqual([{ n: 42 }]);
  });
});

describe("the workflow's publication, on a queued statement", () => {
  it('is one flight, stores what it publishes and still refuses a status computed with an older policy', async () => {
    // A tenant of its own: the policy change below voids the rules of every conversation of its tenant.
    const tenant = 'queued-publication';
    await ensureTenant(single, { id: tenant, name: tenant });
    const conv = await newConversation(single, tenant);
    const rules = { epoch: 4, thresholdTokens: 150_000 } as never;
    const { result, writes } = await countingWrites(() =>
      recordApplied(single, tenant, conv, {
        appliedSeq: 3,
        state: { marker: 'three' },
        quietRules: rules,
        policyVersion: 0,
      }),
    );
    expect(writes.length).toBe(1);
    expect(result).toEqual({ recorded: true, policyVersion: 0 });
    expect(await getConversation(single, tenant, conv)).toMatchObject({
      applied_seq: 3,
      state_seq: 3,
      state: { marker: 'three' },
      quiet_rules: { epoch: 4, thresholdTokens: 150_000 },
    });

    // The policy's version comes back with the COMMIT: a stale status writes nothing, in one flight too.
    const { version } = await setTenantPolicy(single, tenant, { compression: { threshold: 0.6 } });
    const stale = await countingWrites(() =>
      recordApplied(single, tenant, conv, { appliedSeq: 4, state: { marker: 'four' }, policyVersion: 0 }),
    );
    expect(stale.writes.length).toBe(1);
    expect(stale.result).toEqual({ recorded: false, policyVersion: version });
    expect(await getConversation(single, tenant, conv)).toMatchObject({ applied_seq: 3, state: { marker: 'three' } });
  });
});

describe('the append, on queued statements', () => {
  it('is two flights: the lock with its read, then the insert and the totals with the COMMIT', async () => {
    const conv = await newConversation(single, A);
    const batch = (n: number) => [
      { message: user(`question ${n}`), idempotencyKey: `q${n}` },
      { message: assistant(`answer ${n}`), idempotencyKey: `a${n}` },
    ];
    const first = await appendToConversation(single, A, conv, batch(1));
    // Without `row` the totals' statement returns only what checks them.
    expect(first.written).toBeUndefined();
    expect(first.totals).toMatchObject({ version: 1, batchSeq: 1 });
    const { result, writes } = await countingWrites(() =>
      appendToConversation(single, A, conv, batch(2), { row: true }),
    );
    expect(writes.length).toBe(2);

    // What it says it stored is what is stored: ids drawn beforehand, increasing; positions after the first batch.
    expect(result.appended.map((r) => [r.position, r.role, r.idempotencyKey])).toEqual([
      [2, 'user', 'q2'],
      [3, 'assistant', 'a2'],
    ]);
    const transcript = await loadTranscript(single, A, result.sessionId);
    expect(transcript.map((r) => [r.id, r.position, r.message.content])).toEqual([
      ...first.appended.map((r, i) => [r.id, r.position, i === 0 ? 'question 1' : 'answer 1']),
      [result.appended[0]?.id, 2, 'question 2'],
      [result.appended[1]?.id, 3, 'answer 2'],
    ]);
    expect(result.appended[0]!.id).toBeGreaterThan(first.appended[1]!.id);
    expect(result.appended[1]!.id).toBe(result.appended[0]!.id + 1);
    expect(transcript.slice(2).map((r) => r.tokenEstimate)).toEqual(result.appended.map((r) => r.tokenEstimate));
    // The row as the totals' statement wrote it, read after the COMMIT.
    const head = await getConversation(single, A, conv);
    expect(result.written).toEqual(head);
    expect(head).toMatchObject({ version: 2, batch_seq: 2, active_messages: 4, last_key: 'a2' });

    // A batch of duplicates only: the lock with its read, then the COMMIT; nothing written.
    const again = await countingWrites(() => appendToConversation(single, A, conv, batch(2)));
    expect(again.result).toMatchObject({ appended: [], duplicates: ['q2', 'a2'] });
    expect(again.writes.length).toBe(2);
    expect(await getConversation(single, A, conv)).toEqual(head);
  });
  it('appends racing a rotation: each batch once, whole and in order, in the session current when it locked', async () => {
    const conv = await newConversation(testDb.db, A);
    const seed = await appendToConversation(testDb.db, A, conv, [
      { message: user('q0'), idempotencyKey: 'seed-q' },
      { message: assistant('a0'), idempotencyKey: 'seed-a' },
    ]);
    const compactionId = uniqueId('compact');
    await createCompactionRecord(testDb.db, A, {
      id: compactionId,
      sessionId: seed.sessionId,
      conversationId: conv,
      seq: 1,
      trigger: 'manual',
      inPlace: false,
    });
    const newSessionId = uniqueId('rotated');
    // Twelve appends start with the rotation: those that wait for its lock find the current session changed.
    const batches = Array.from({ length: 12 }, (_, b) => [
      { message: user(`q${b + 1}`), idempotencyKey: `q${b + 1}` },
      { message: assistant(`a${b + 1}`), idempotencyKey: `a${b + 1}` },
    ]);
    const [rotation, ...appends] = await Promise.all([
      commitRotation(testDb.db, A, {
        compactionId,
        oldSessionId: seed.sessionId,
        newSessionId,
        expectedRowIds: seed.appended.map((r) => r.id),
        output: [assistant(summaryText('earlier'))],
        summaryIndex: 0,
        summaryBody: 'earlier',
        fallbackUsed: false,
        stats: statsFor('earlier'),
      }),
      ...batches.map((items) => appendToConversation(testDb.db, A, conv, items)),
    ]);
    expect(rotation.sessionId).toBe(newSessionId);
    const head = await getConversation(testDb.db, A, conv);
    expect(head).toMatchObject({ current_session_id: newSessionId, batch_seq: 13 });
    const transcript = await loadTranscript(testDb.db, A, newSessionId);
    expect(transcript.map((r) => r.position)).toEqual(transcript.map((_, i) => i));
    expect(head?.active_messages).toBe(transcript.length);
    const contents = transcript.map((r) => r.message.content as string);
    expect(contents[0]).toBe(summaryText('earlier'));
    // Every batch once, its two messages next to each other, in the order the appends took the lock.
    expect(contents.slice(1).sort()).toEqual(batches.flatMap((b) => b.map((i) => i.message.content as string)).sort());
    for (let i = 1; i < contents.length; i += 2) {
      expect(contents[i + 1]).toBe(`a${(contents[i] as string).slice(1)}`);
    }
    const bySeq = appends.toSorted((x, y) => (x.totals?.batchSeq ?? 0) - (y.totals?.batchSeq ?? 0));
    expect(bySeq.map((r) => r.totals?.batchSeq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 2));
  });
});
