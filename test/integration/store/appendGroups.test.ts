// Batches committed together while the write slots are busy (infra/db/appendGroups.ts, issue #11 §1): every batch is
// stored once, in its conversation's arrival order, under its own tenant whatever tenants share its transaction, a
// conversation at most once per transaction, within maxGroupMessages; a batch refused on its own fails alone, and
// any other failure — a conflict, a lock another writer holds — sends each batch of the group back to its own
// transaction at once. Which transaction stored a row is PostgreSQL's own record of it: the row's xmin.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { estimateMessagesTokensRough } from '../../../engine/tokens.js';
import type { ChatMessage } from '../../../engine/types.js';
import {
  AppendGroups,
  DEFAULT_MAX_GROUP_TOKENS,
  type DissolvedReason,
  type GroupableOptions,
} from '../../../infra/db/appendGroups.js';
import { createDb } from '../../../infra/db/connect.js';
import { type AppendResult, appendToConversation } from '../../../infra/db/conversationAppend.js';
import { getConversation } from '../../../infra/db/conversations.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { ConversationNotFoundError, IdempotencyConflictError } from '../../../infra/db/storeErrors.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { countingWrites } from '../../support/harness/socketWrites.js';
import { assistant, newConversation, toolResult, user } from './storeFixtures.js';

let testDb: TestDatabase;
const A = 'groups-a';
const B = 'groups-b';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  for (const id of [A, B]) await ensureTenant(testDb.db, { id, name: id });
});
afterAll(async () => {
  await testDb?.drop();
});

const keyed = (messages: ChatMessage[], prefix: string) =>
  messages.map((message, i) => ({ message, idempotencyKey: `${prefix}:${i}` }));

interface StoredRow {
  xmin: string;
  tenant_id: string;
  conversation_id: string;
  idempotency_key: string;
}

/** Every row of these conversations with the transaction that stored it. */
async function rowsOf(conversations: readonly string[]): Promise<StoredRow[]> {
  const { rows } = await sql<StoredRow>`
    SELECT xmin::text AS xmin, tenant_id, conversation_id, idempotency_key FROM messages
     WHERE conversation_id = ANY(${conversations}::text[]) ORDER BY id`.execute(testDb.db);
  return rows;
}

/** The contents of the conversation's transcript, in position order. */
async function transcriptOf(tenantId: string, conversationId: string): Promise<unknown[]> {
  const head = await getConversation(testDb.db, tenantId, conversationId);
  return (await loadTranscript(testDb.db, tenantId, head!.current_session_id)).map((r) => r.message.content);
}

/**
 * A batch that takes the only slot: the ones appended in the same tick wait while it runs, and are grouped after it.
 */
const takeTheSlot = (groups: AppendGroups, tenantId: string, conversationId: string) =>
  groups.append(tenantId, conversationId, keyed([user('first')], `first-${conversationId}`));

/**
 * Three batches (x, a middle one with this `settle`, y) of three conversations, waiting behind one that holds the only
 * slot, so that they run as one group; their outcomes.
 */
async function groupAroundMiddle(settle: GroupableOptions['settle']) {
  const dissolved: DissolvedReason[] = [];
  const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1, onDissolved: (r) => dissolved.push(r) });
  const [holder, x, middle, y] = await Promise.all(Array.from({ length: 4 }, () => newConversation(testDb.db, A)));
  const first = takeTheSlot(groups, A, holder!);
  const attempts = [
    groups.append(A, x!, keyed([user('x')], 'x')),
    groups.append(A, middle!, keyed([user('m')], 'm'), { settle }),
    groups.append(A, y!, keyed([user('y')], 'y')),
  ];
  expect(groups.waiting).toBe(3);
  await first;
  return { x: x!, middle: middle!, y: y!, outcomes: await Promise.allSettled(attempts), dissolved };
}

describe('AppendGroups', () => {
  it('stores every batch once, in each conversation’s arrival order, under its own tenant, tenants mixed', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const groups = new AppendGroups(testDb.db, {
      connections: 5,
      slots: 1,
      maxGroup: 4,
      onTransaction: (n) => metrics.appendGroupBatches.observe(n),
    });
    const conversations: Record<string, string[]> = {
      [A]: await Promise.all(Array.from({ length: 4 }, () => newConversation(testDb.db, A))),
      [B]: await Promise.all(Array.from({ length: 4 }, () => newConversation(testDb.db, B))),
    };
    // Three batches per conversation, all posted at once, tenants interleaved; one batch posted twice.
    const posts: Array<{ tenantId: string; conversationId: string; batch: number }> = [];
    for (let batch = 0; batch < 3; batch++) {
      for (let i = 0; i < 4; i++) {
        for (const tenantId of [A, B]) posts.push({ tenantId, conversationId: conversations[tenantId]![i]!, batch });
      }
    }
    posts.splice(5, 0, { ...posts[0]! });
    const results = await Promise.all(
      posts.map(({ tenantId, conversationId, batch }) =>
        groups.append(tenantId, conversationId, keyed([user(`q${batch}`), assistant(`a${batch}`)], `b${batch}`)),
      ),
    );
    // The repeated post came after its first: a duplicate, stored once.
    expect(results[5]).toMatchObject({ appended: [], duplicates: ['b0:0', 'b0:1'] });
    expect(results.filter((r) => r.appended.length === 2)).toHaveLength(24);
    for (const tenantId of [A, B]) {
      for (const conversationId of conversations[tenantId]!) {
        expect(await transcriptOf(tenantId, conversationId)).toEqual(['q0', 'a0', 'q1', 'a1', 'q2', 'a2']);
        const own = posts
          .map((post, i) => ({ post, result: results[i] as AppendResult }))
          .filter(({ post, result }) => post.conversationId === conversationId && result.appended.length > 0);
        expect(own.map(({ result }) => result.totals?.batchSeq)).toEqual([1, 2, 3]);
      }
    }
    const rows = await rowsOf([...conversations[A]!, ...conversations[B]!]);
    expect(rows).toHaveLength(48);
    const transactions = new Map<string, StoredRow[]>();
    for (const row of rows) transactions.set(row.xmin, [...(transactions.get(row.xmin) ?? []), row]);
    // Grouped: far fewer transactions than batches, at most maxGroup batches, a conversation once; first come, first
    // committed, so the interleaved tenants share transactions.
    expect(transactions.size).toBeLessThan(24);
    const mixed = [...transactions.values()].filter((stored) => new Set(stored.map((r) => r.tenant_id)).size === 2);
    expect(mixed.length).toBeGreaterThan(0);
    for (const stored of transactions.values()) {
      const batches = new Set(stored.map((row) => `${row.conversation_id} ${row.idempotency_key.split(':')[0]}`));
      expect(batches.size).toBeLessThanOrEqual(4);
      expect(new Set(stored.map((row) => row.conversation_id)).size).toBe(batches.size);
    }
    expect(groups.waiting).toBe(0);
    // /metrics: every batch once, in the transactions PostgreSQL saw — and maybe one that stored nothing, if the
    // repeated post ran alone.
    const histogram = (await metrics.appendGroupBatches.get()).values;
    const count = histogram.find((v) => v.metricName === 'dctx_append_group_batches_count')?.value;
    const sum = histogram.find((v) => v.metricName === 'dctx_append_group_batches_sum')?.value;
    expect(sum).toBe(posts.length);
    expect([transactions.size, transactions.size + 1]).toContain(count);
  });

  it('a batch refused on its own fails alone; the others of its transaction are stored', async () => {
    const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1 });
    const [holder, taken, x] = await Promise.all(Array.from({ length: 3 }, () => newConversation(testDb.db, A)));
    const y = await newConversation(testDb.db, B);
    await appendToConversation(testDb.db, A, taken!, keyed([user('original')], 'k'));
    const first = takeTheSlot(groups, A, holder!);
    const attempts = [
      groups.append(A, x!, keyed([user('x')], 'x')),
      groups.append(A, taken!, keyed([user('changed')], 'k')),
      groups.append(A, 'no-such-conversation', keyed([user('lost')], 'l')),
      groups.append(B, y, keyed([user('y')], 'y')),
      // Another tenant's conversation, in a transaction that holds one of that tenant's: not found, as alone.
      groups.append(A, y, keyed([user('intruder')], 'i')),
    ];
    expect(groups.waiting).toBe(5);
    await first;
    const [xDone, conflict, missing, yDone, intruder] = await Promise.allSettled(attempts);
    expect(conflict).toMatchObject({ status: 'rejected', reason: expect.any(IdempotencyConflictError) });
    expect(missing).toMatchObject({ status: 'rejected', reason: expect.any(ConversationNotFoundError) });
    expect(intruder).toMatchObject({ status: 'rejected', reason: expect.any(ConversationNotFoundError) });
    expect([xDone?.status, yDone?.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(await transcriptOf(A, taken!)).toEqual(['original']);
    expect(await transcriptOf(B, y)).toEqual(['y']);
    const rows = await rowsOf([x!, y]);
    expect(rows.map((row) => [row.tenant_id, row.conversation_id])).toEqual([
      [A, x],
      [B, y],
    ]);
    // x and y were committed by one transaction, with the three refusals in it.
    expect(new Set(rows.map((row) => row.xmin)).size).toBe(1);
  });

  it('any other failure rolls the group back and each batch runs alone: one batch never fails another', async () => {
    let settles = 0;
    // Throws once its insert is queued: the transaction it is in cannot commit.
    const {
      x,
      middle: failing,
      y,
      outcomes,
      dissolved,
    } = await groupAroundMiddle(() => {
      settles++;
      throw new Error('settle failed');
    });
    const [xDone, failed, yDone] = outcomes;
    expect(failed).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: 'settle failed' }) });
    // Once in the group, once alone.
    expect(settles).toBe(2);
    expect(dissolved).toEqual(['error']);
    expect([xDone?.status, yDone?.status]).toEqual(['fulfilled', 'fulfilled']);
    expect(await transcriptOf(A, failing)).toEqual([]);
    const rows = await rowsOf([x, y, failing]);
    expect(rows.map((row) => row.conversation_id)).toEqual(expect.arrayContaining([x, y]));
    expect(rows).toHaveLength(2);
    // Alone: each in a transaction of its own.
    expect(new Set(rows.map((row) => row.xmin)).size).toBe(2);
    expect((await getConversation(testDb.db, A, failing))?.batch_seq).toBe(0);
  });

  it('a group stays within maxGroupMessages: a large batch is left for a later group, keeping its place', async () => {
    const sizes: number[] = [];
    const groups = new AppendGroups(testDb.db, {
      connections: 5,
      slots: 1,
      maxGroupMessages: 4,
      onTransaction: (n) => sizes.push(n),
    });
    const [holder, a, b, c, large, e] = await Promise.all(
      Array.from({ length: 6 }, () => newConversation(testDb.db, A)),
    );
    const first = takeTheSlot(groups, A, holder!);
    const messages = (n: number, prefix: string) =>
      keyed(
        Array.from({ length: n }, (_, i) => user(`${prefix}${i}`)),
        prefix,
      );
    const attempts = [
      groups.append(A, a!, messages(2, 'a')),
      groups.append(A, b!, messages(2, 'b')),
      groups.append(A, c!, messages(2, 'c')),
      groups.append(A, large!, messages(5, 'l')),
      groups.append(A, e!, messages(1, 'e')),
    ];
    await first;
    await Promise.all(attempts);
    // a + b fill the first group (4); c fits neither it nor, with the large batch, the next: c and e share one; the
    // large batch, the oldest left, then runs alone.
    expect(sizes).toEqual([1, 2, 2, 1]);
    const rows = await rowsOf([a!, b!, c!, large!, e!]);
    const xmin = (conversation: string) =>
      new Set(rows.filter((r) => r.conversation_id === conversation).map((r) => r.xmin));
    expect(rows).toHaveLength(12);
    expect(xmin(a!)).toEqual(xmin(b!));
    expect(xmin(c!)).toEqual(xmin(e!));
    expect(xmin(large!).size).toBe(1);
    expect([...xmin(a!), ...xmin(c!)]).not.toContain([...xmin(large!)][0]);
    expect(await transcriptOf(A, large!)).toEqual(['l0', 'l1', 'l2', 'l3', 'l4']);
  });

  it('a group stays within DEFAULT_MAX_GROUP_TOKENS: a batch of one long tool output runs alone, keeping its place', async () => {
    const sizes: number[] = [];
    const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1, onTransaction: (n) => sizes.push(n) });
    const tenants = [A, B, A, B];
    const holder = await newConversation(testDb.db, A);
    const [a, large, c, d] = await Promise.all(tenants.map((t) => newConversation(testDb.db, t)));
    // 160 KB of text: about 40,000 estimated tokens, over the cap on its own; the others are a few tokens each.
    const output = 'lorem ipsum dolor '.repeat(9_000);
    const first = takeTheSlot(groups, A, holder);
    const attempts = [
      groups.append(A, a!, keyed([user('a')], 'a')),
      groups.append(B, large!, keyed([user('run it'), toolResult('t1', output)], 'l')),
      groups.append(A, c!, keyed([user('c')], 'c')),
      groups.append(B, d!, keyed([user('d')], 'd')),
    ];
    await first;
    await Promise.all(attempts);
    // a, c and d together; the long output, passed over, the oldest left, then alone.
    expect(sizes).toEqual([1, 3, 1]);
    const rows = await rowsOf([a!, large!, c!, d!]);
    const xmin = (conversation: string) =>
      new Set(rows.filter((r) => r.conversation_id === conversation).map((r) => r.xmin));
    expect(xmin(a!)).toEqual(xmin(c!));
    expect(xmin(a!)).toEqual(xmin(d!));
    expect(xmin(large!).size).toBe(1);
    expect(xmin(a!)).not.toEqual(xmin(large!));
    expect(await transcriptOf(B, large!)).toEqual(['run it', output]);
    // The output alone is over the cap, and the batches together within every other limit of a group.
    expect(DEFAULT_MAX_GROUP_TOKENS).toBeLessThan(estimateMessagesTokensRough([toolResult('t1', output)]));
    expect(2 * DEFAULT_MAX_GROUP_TOKENS).toBeGreaterThan(estimateMessagesTokensRough([toolResult('t1', output)]));
  });

  it('the tokens of a group are its batches’ together: a third batch that would take it over the cap waits', async () => {
    const sizes: number[] = [];
    const groups = new AppendGroups(testDb.db, {
      connections: 5,
      slots: 1,
      maxGroupTokens: 100,
      onTransaction: (n) => sizes.push(n),
    });
    const [holder, a, b, c] = await Promise.all(Array.from({ length: 4 }, () => newConversation(testDb.db, A)));
    const question = user('x'.repeat(140));
    // About 42 tokens each: two fit in 100, three do not.
    expect(estimateMessagesTokensRough([question])).toBeGreaterThan(34);
    expect(estimateMessagesTokensRough([question])).toBeLessThanOrEqual(50);
    const first = takeTheSlot(groups, A, holder!);
    const attempts = [a, b, c].map((conversation) => groups.append(A, conversation!, keyed([question], 'q')));
    await first;
    await Promise.all(attempts);
    expect(sizes).toEqual([1, 2, 1]);
  });

  it('a conversation whose row another writer holds does not hold up the rest of its group', async () => {
    const dissolved: DissolvedReason[] = [];
    const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1, onDissolved: (r) => dissolved.push(r) });
    const [holder, held, x] = await Promise.all(Array.from({ length: 3 }, () => newConversation(testDb.db, A)));
    const y = await newConversation(testDb.db, B);
    // Another writer (a compaction's commit, say) holds the conversation's row, on a connection of its own.
    const writer = new pg.Client({ connectionString: testDb.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE', [held]);
      const first = takeTheSlot(groups, A, holder!);
      const heldAppend = groups.append(A, held!, keyed([user('held')], 'h'));
      const others = [groups.append(A, x!, keyed([user('x')], 'x')), groups.append(B, y, keyed([user('y')], 'y'))];
      expect(groups.waiting).toBe(3);
      await first;
      // The group gave up on the lock: the other two are stored while the row is still held (a group that waited
      // would keep them until the writer ends, which it does only after this).
      const stored = await Promise.race([
        Promise.all(others).then(() => 'stored'),
        sleep(10_000).then(() => 'still waiting'),
      ]);
      expect(stored).toBe('stored');
      expect(dissolved).toEqual(['lock_timeout']);
      expect(await transcriptOf(A, x!)).toEqual(['x']);
      expect(await transcriptOf(B, y)).toEqual(['y']);
      expect(await transcriptOf(A, held!)).toEqual([]);
      await writer.query('COMMIT');
      // The held conversation's batch, alone, waited for the row as an append does, and is stored.
      expect((await heldAppend).appended).toHaveLength(1);
      expect(await transcriptOf(A, held!)).toEqual(['held']);
    } finally {
      await writer.end();
    }
  });

  it('batches of conversations another writer holds wait outside the slots: the others, of any tenant, go on', async () => {
    // One batch waits for a held row at a time: the second held one waits for its place, holding no connection.
    const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1, lockWaiters: 1 });
    const [holder, held, x, alsoHeld] = await Promise.all(
      Array.from({ length: 4 }, () => newConversation(testDb.db, A)),
    );
    const y = await newConversation(testDb.db, B);
    const stored = (append: Promise<unknown>) =>
      Promise.race([append.then(() => 'stored'), sleep(5_000).then(() => 'still waiting')]);
    // Another writer (a tenant's erasure, a compaction's commit) holds two conversations' rows, for a while.
    const writer = new pg.Client({ connectionString: testDb.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query('SELECT 1 FROM conversations WHERE id = ANY($1) FOR UPDATE', [[held, alsoHeld]]);
      // A group of a held conversation and two others is rolled back; those two are stored at once.
      const first = takeTheSlot(groups, A, holder!);
      const heldFirst = groups.append(A, held!, keyed([user('held 1')], 'h1'));
      const others = [
        groups.append(A, x!, keyed([user('x 1')], 'x1')),
        groups.append(B, y, keyed([user('y 1')], 'y1')),
      ];
      await first;
      expect(await stored(Promise.all(others))).toBe('stored');
      // Nor do the next ones of those conversations wait for the held one, which waits outside the only slot.
      expect(await stored(groups.append(A, x!, keyed([user('x 2')], 'x2')))).toBe('stored');
      // A batch that meets a held row alone leaves the slot to the others too.
      const alsoHeldFirst = groups.append(A, alsoHeld!, keyed([user('also held 1')], 'a1'));
      await sleep(200);
      expect(await stored(groups.append(B, y, keyed([user('y 2')], 'y2')))).toBe('stored');
      // A held conversation's later batch stays behind its first.
      const heldSecond = groups.append(A, held!, keyed([user('held 2')], 'h2'));
      await sleep(100);
      expect(await transcriptOf(A, held!)).toEqual([]);
      await writer.query('COMMIT');
      await Promise.all([heldFirst, heldSecond, alsoHeldFirst]);
      expect(await transcriptOf(A, held!)).toEqual(['held 1', 'held 2']);
      expect(await transcriptOf(A, alsoHeld!)).toEqual(['also held 1']);
      expect(await transcriptOf(A, x!)).toEqual(['x 1', 'x 2']);
      expect(await transcriptOf(B, y)).toEqual(['y 1', 'y 2']);
    } finally {
      await writer.end();
    }
  });

  it('a row held for long never holds up a batch whose row was held briefly; a batch held too long fails, unstored', async () => {
    const groups = new AppendGroups(testDb.db, {
      connections: 5,
      slots: 1,
      lockWaiters: 1,
      heldLockTimeoutMs: 100,
      heldDeadlineMs: 1_500,
    });
    const [long, brief] = await Promise.all([newConversation(testDb.db, A), newConversation(testDb.db, B)]);
    const holding = async (conversationId: string) => {
      const writer = new pg.Client({ connectionString: testDb.url });
      await writer.connect();
      await writer.query('BEGIN');
      await writer.query('SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE', [conversationId]);
      return writer;
    };
    const longWriter = await holding(long!);
    const briefWriter = await holding(brief);
    try {
      // Held first, the long one takes the only place to wait, again and again; the brief one, held after it, still
      // gets its turns.
      const longAppend = groups.append(A, long!, keyed([user('long')], 'l'));
      const failed = longAppend.then(
        () => null,
        (error: unknown) => error,
      );
      await sleep(150);
      const briefAppend = groups.append(B, brief, keyed([user('brief')], 'b'));
      await sleep(300);
      await briefWriter.query('COMMIT');
      expect(await Promise.race([briefAppend.then(() => 'stored'), sleep(1_000).then(() => 'still waiting')])).toBe(
        'stored',
      );
      expect(await transcriptOf(B, brief)).toEqual(['brief']);
      // The long one is still held at its deadline: it fails with the lock timeout, nothing of it stored.
      expect(await failed).toMatchObject({ code: '55P03' });
      expect(await transcriptOf(A, long!)).toEqual([]);
      await longWriter.query('COMMIT');
      // Its conversation is free again: the client's retry is stored.
      expect((await groups.append(A, long!, keyed([user('long')], 'l'))).appended).toHaveLength(1);
      expect(await transcriptOf(A, long!)).toEqual(['long']);
    } finally {
      await longWriter.end();
      await briefWriter.end();
    }
  });

  it('a rotation that commits while a later tenant’s batch waits for its lock: read again under that tenant, in the group', async () => {
    // The batch's lock waits for the rotation; once it commits, the lock's join finds no row and the append reads the
    // conversation again (conversationHead.ts `headByTwoLocks`, then the new session's state), statements sent after
    // the switch to its tenant: under the first batch's tenant they would find nothing and refuse it as not found.
    // The wait must end within the group's lock timeout: a group that gave up is tried again with new conversations.
    const writer = new pg.Client({ connectionString: testDb.url });
    const watcher = new pg.Client({ connectionString: testDb.url });
    await Promise.all([writer.connect(), watcher.connect()]);
    try {
      for (let attempt = 1; ; attempt++) {
        const dissolved: DissolvedReason[] = [];
        const groups = new AppendGroups(testDb.db, { connections: 5, slots: 1, onDissolved: (r) => dissolved.push(r) });
        const [holder, x] = await Promise.all([newConversation(testDb.db, A), newConversation(testDb.db, A)]);
        const held = await newConversation(testDb.db, B);
        await appendToConversation(testDb.db, B, held, keyed([user('before')], 'before'));
        const rotated = `${held}-rotated`;
        await writer.query('BEGIN');
        await writer.query(
          `INSERT INTO sessions (tenant_id, id, conversation_id, parent_session_id)
           SELECT tenant_id, $2, id, current_session_id FROM conversations WHERE id = $1`,
          [held, rotated],
        );
        await writer.query('UPDATE conversations SET current_session_id = $2, version = version + 1 WHERE id = $1', [
          held,
          rotated,
        ]);
        const first = takeTheSlot(groups, A, holder!);
        const appends = [
          groups.append(A, x!, keyed([user('x')], 'x')),
          groups.append(B, held, keyed([user('h')], 'h')),
        ];
        await first;
        // The group's transaction waits for the conversation's row: the rotation commits now.
        const deadline = Date.now() + 5_000;
        for (;;) {
          const { rows } = await watcher.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          );
          if (rows.length > 0 || Date.now() > deadline) break;
        }
        await writer.query('COMMIT');
        const [stored, heldResult] = await Promise.all(appends);
        // Only a lock wait that outlasted the group's timeout is tried again; any other failure shows.
        if (dissolved.length > 0 && dissolved.every((r) => r === 'lock_timeout') && attempt < 5) continue;
        expect(dissolved).toEqual([]);
        expect(stored!.appended).toHaveLength(1);
        // Stored in the session current when its lock was granted, after the rotation, in the group's transaction.
        expect(heldResult).toMatchObject({ sessionId: rotated, appended: [{ position: 0 }] });
        expect(await transcriptOf(B, held)).toEqual(['h']);
        const rows = await rowsOf([x!, held]);
        expect(rows.filter((row) => row.idempotency_key !== 'before:0').map((row) => row.tenant_id)).toEqual([A, B]);
        expect(new Set(rows.filter((row) => row.idempotency_key !== 'before:0').map((row) => row.xmin)).size).toBe(1);
        break;
      }
    } finally {
      await writer.query('ROLLBACK').catch(() => undefined);
      await Promise.all([writer.end(), watcher.end()]);
    }
  });

  it('a group that meets a conflict is not tried again as a group: its batches run alone, with their retries', async () => {
    let settles = 0;
    // A serialization failure the first time only (what a retry of the same transaction would get past).
    const { x, middle, y, outcomes, dissolved } = await groupAroundMiddle(() => {
      settles++;
      if (settles === 1) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
      return null;
    });
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(settles).toBe(2);
    expect(dissolved).toEqual(['conflict']);
    // Alone, each in its own transaction: a retried group would have stored all three in one.
    expect(new Set((await rowsOf([x, middle, y])).map((row) => row.xmin)).size).toBe(3);
  });

  it('a group costs two flights: every batch’s lock and reads, then every batch’s writes with the COMMIT', async () => {
    // One connection, opened before anything is counted.
    const single = createDb({ connectionString: testDb.url, maxConnections: 1 });
    try {
      await sql`SELECT 1`.execute(single);
      const groups = new AppendGroups(single, { connections: 1 });
      // Four batches of two tenants, interleaved: the tenant switches between them travel in the same flights.
      const tenants = [A, B, A, B];
      const holder = await newConversation(testDb.db, B);
      const others = await Promise.all(tenants.map((t) => newConversation(testDb.db, t)));
      const { result, writes } = await countingWrites(async () => {
        const first = takeTheSlot(groups, B, holder);
        const grouped = others.map((c, i) => groups.append(tenants[i]!, c, keyed([user('q'), assistant('a')], 'g')));
        return Promise.all([first, ...grouped]);
      });
      expect(result.map((r) => r.appended.length)).toEqual([1, 2, 2, 2, 2]);
      // The first batch alone (two flights), then the four others together (two flights).
      expect(writes).toHaveLength(4);
      const rows = await rowsOf(others);
      expect(new Set(rows.map((row) => row.xmin)).size).toBe(1);
      expect(rows.map((row) => row.tenant_id).sort()).toEqual([A, A, A, A, B, B, B, B]);
    } finally {
      await single.destroy();
    }
  });
});
