// Rotation commit (SPEC §13.3), lineage and titles, on the real PostgreSQL.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import { type CommitOutcome, commitRotation } from '../../../infra/db/compactionCommit/index.js';
import { getCompaction } from '../../../infra/db/compactions.js';
import { listMessages, loadRowsByIds, loadTranscript, setMessagePinned } from '../../../infra/db/messages.js';
import {
  createSession,
  getSession,
  listConversationSessions,
  newestDescendant,
  nextRotationTitle,
  titleBase,
} from '../../../infra/db/sessions.js';
import { SessionNotFoundError, TranscriptChangedError } from '../../../infra/db/storeErrors.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, newCompaction, seedSession, statsFor, summaryText, uniqueId, user } from './storeFixtures.js';

let testDb: TestDatabase;
const TENANT = 'tenant-rotate';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

const history: ChatMessage[] = [
  user('fix the login bug'),
  assistant('looking'),
  user('any luck?'),
  assistant('found it'),
];

/** Rotates `sessionId` (its current transcript) into a new session; returns the outcome. */
async function rotate(
  tenantId: string,
  session: { sessionId: string; conversationId: string },
  body: string,
  options: { fallbackUsed?: boolean } = {},
): Promise<CommitOutcome> {
  const rows = await loadTranscript(testDb.db, tenantId, session.sessionId);
  const compactionId = await newCompaction(testDb.db, { tenantId, ...session }, { inPlace: false });
  const last = rows[rows.length - 1]!;
  return commitRotation(testDb.db, tenantId, {
    oldSessionId: session.sessionId,
    newSessionId: uniqueId('rot'),
    compactionId,
    expectedRowIds: rows.map((r) => r.id),
    output: [user(summaryText(body)), last.message],
    summaryIndex: 0,
    summaryBody: body,
    fallbackUsed: options.fallbackUsed ?? false,
    stats: statsFor(body, options.fallbackUsed),
  });
}

describe('commitRotation', () => {
  // The compaction read the rows before the operator pinned them: with its messages the commit reads pins anew.
  it.each([
    ['reading the rows again', false],
    ['given the messages the compaction read', true],
  ])('keeps the pin of every row it carries into the new session (SPEC §19 rehydrate_pinned), %s', async (_, light) => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const rows = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    const [first, , third, last] = rows;
    // Pinned: the first question (carried again after the summary, as rehydration does) and the last answer.
    for (const row of [first!, last!]) {
      expect(await setMessagePinned(testDb.db, TENANT, seeded.conversationId, row.id, true)).toBe(row.id);
    }
    const body = 'Found the login bug.';
    const compactionId = await newCompaction(testDb.db, { ...seeded, tenantId: TENANT }, { inPlace: false });
    const outcome = await commitRotation(testDb.db, TENANT, {
      oldSessionId: seeded.sessionId,
      newSessionId: uniqueId('rot'),
      compactionId,
      expectedRowIds: rows.map((r) => r.id),
      ...(light ? { inputMessages: rows.map((r) => r.message) } : {}),
      output: [user(summaryText(body)), first!.message, third!.message, last!.message],
      summaryIndex: 0,
      summaryBody: body,
      fallbackUsed: false,
      stats: statsFor(body),
    });
    const copies = await loadTranscript(testDb.db, TENANT, outcome.sessionId);
    expect(copies.map((r) => r.message.content)).toEqual([
      summaryText(body),
      first!.message.content,
      third!.message.content,
      last!.message.content,
    ]);
    expect(copies.map((r) => r.pinned)).toEqual([false, true, false, true]);
    // The parent's rows keep their own flags.
    const parent = await loadRowsByIds(
      testDb.db,
      TENANT,
      rows.map((r) => r.id),
    );
    expect(parent.map((r) => r.pinned)).toEqual([true, false, false, true]);
  });

  it('creates the child session with the output, ends the parent, leaves the parent rows untouched', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: 'Fix bug', source: 'discord' });
    const beforeOld = await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true });
    const outcome = await rotate(TENANT, seeded, 'Found the login bug.');

    expect(outcome).toMatchObject({ inPlace: false, oldSessionId: seeded.sessionId, compressionCount: 1 });
    const child = await getSession(testDb.db, TENANT, outcome.sessionId);
    const parent = await getSession(testDb.db, TENANT, seeded.sessionId);
    expect(child).toMatchObject({
      conversation_id: seeded.conversationId,
      source: 'discord',
      model: 'gpt-test',
      provider: 'openai',
      parent_session_id: seeded.sessionId,
      compression_count: 1,
      title: 'Fix bug #2',
      ended_at: null,
    });
    expect(parent).toMatchObject({ end_reason: 'compression', compression_count: 0 });
    expect(parent?.ended_at).toBeInstanceOf(Date);

    const childRows = await loadTranscript(testDb.db, TENANT, outcome.sessionId);
    expect(childRows.map((r) => r.message)).toEqual([user(summaryText('Found the login bug.')), history[3]]);
    expect(childRows[0]).toMatchObject({ summaryBody: 'Found the login bug.', id: outcome.summaryRowId });
    expect(await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true })).toEqual(beforeOld);

    const record = await getCompaction(testDb.db, TENANT, outcome.compactionId);
    expect(record).toMatchObject({
      status: 'committed',
      in_place: false,
      new_session_id: outcome.sessionId,
      compacted_row_ids: seeded.rows.slice(0, 3).map((r) => r.id),
    });
    const events = await withTenant(testDb.db, TENANT, (tx) =>
      tx
        .selectFrom('events')
        .selectAll()
        .where('compaction_id', '=', outcome.compactionId)
        .where('type', '=', 'session:compress')
        .execute(),
    );
    expect(events).toHaveLength(1);
    expect(events[0]?.session_id).toBe(outcome.sessionId);
    expect(events[0]?.payload).toEqual({
      platform: 'discord',
      session_id: outcome.sessionId,
      old_session_id: seeded.sessionId,
      in_place: false,
      compression_count: 1,
    });
  });

  it('numbers titles Fix bug → Fix bug #2 → Fix bug #3 and follows the lineage to the newest descendant', async () => {
    const seeded = await seedSession(testDb.db, 'tenant-titles', history, { title: 'Fix bug' });
    const first = await rotate('tenant-titles', seeded, 'one');
    const second = await rotate(
      'tenant-titles',
      { sessionId: first.sessionId, conversationId: seeded.conversationId },
      'two',
    );
    const titles = (await listConversationSessions(testDb.db, 'tenant-titles', seeded.conversationId)).map(
      (s) => s.title,
    );
    expect(titles).toEqual(['Fix bug', 'Fix bug #2', 'Fix bug #3']);
    expect(second.compressionCount).toBe(2);
    expect((await newestDescendant(testDb.db, 'tenant-titles', seeded.sessionId)).id).toBe(second.sessionId);
    expect((await newestDescendant(testDb.db, 'tenant-titles', second.sessionId)).id).toBe(second.sessionId);
    await expect(newestDescendant(testDb.db, 'tenant-titles', 'missing')).rejects.toBeInstanceOf(SessionNotFoundError);

    // Another session titled "Fix bug #7" in the tenant raises the next number; "#07" and other bases do not count.
    await createSession(testDb.db, 'tenant-titles', {
      id: uniqueId('t'),
      conversationId: 'other',
      title: 'Fix bug #7',
    });
    await createSession(testDb.db, 'tenant-titles', {
      id: uniqueId('t'),
      conversationId: 'other',
      title: 'Fix bug #08',
    });
    await createSession(testDb.db, 'tenant-titles', {
      id: uniqueId('t'),
      conversationId: 'other',
      title: 'Fix bugs #9',
    });
    await createSession(testDb.db, 'tenant-titles', {
      id: uniqueId('t'),
      conversationId: 'other',
      title: 'Fix_bug #10',
    });
    const next = await withTenant(testDb.db, 'tenant-titles', (tx) =>
      nextRotationTitle(tx, 'tenant-titles', 'Fix bug #3'),
    );
    expect(next).toBe('Fix bug #8');
    expect(
      await withTenant(testDb.db, 'tenant-titles', (tx) => nextRotationTitle(tx, 'tenant-titles', null)),
    ).toBeNull();
    expect(
      await withTenant(testDb.db, 'tenant-titles', (tx) => nextRotationTitle(tx, 'tenant-titles', 'New 100%')),
    ).toBe('New 100% #2');
    expect(titleBase('Fix bug #12')).toBe('Fix bug');
    expect(titleBase('Issue #12 #3')).toBe('Issue #12');
  });

  it('a null title stays null', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: null });
    const outcome = await rotate(TENANT, seeded, 'untitled');
    expect((await getSession(testDb.db, TENANT, outcome.sessionId))?.title).toBeNull();
  });

  it('newest descendant: newest started_at among children first, at most 32 hops', async () => {
    const tenantId = 'tenant-lineage';
    const root = await seedSession(testDb.db, tenantId, []);
    const mk = async (id: string, parent: string, startedAt: string) => {
      await createSession(testDb.db, tenantId, { id, conversationId: root.conversationId, parentSessionId: parent });
      await testDb.db.updateTable('sessions').set({ started_at: startedAt }).where('id', '=', id).execute();
    };
    await mk('older-child', root.sessionId, '2030-01-01T00:00:00Z');
    await mk('newer-child', root.sessionId, '2030-01-02T00:00:00Z');
    await mk('grandchild', 'newer-child', '2030-01-03T00:00:00Z');
    await mk('older-grandchild', 'older-child', '2030-01-04T00:00:00Z');
    expect((await newestDescendant(testDb.db, tenantId, root.sessionId)).id).toBe('grandchild');

    let parent = 'chain-0';
    await createSession(testDb.db, tenantId, { id: parent, conversationId: 'chain' });
    for (let i = 1; i <= 40; i++) {
      await createSession(testDb.db, tenantId, { id: `chain-${i}`, conversationId: 'chain', parentSessionId: parent });
      parent = `chain-${i}`;
    }
    expect((await newestDescendant(testDb.db, tenantId, 'chain-0')).id).toBe('chain-32');
  });

  it('the first end reason wins: an already ended session keeps its reason and end time', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: 'Ended' });
    await testDb.db
      .updateTable('sessions')
      .set({ ended_at: '2030-05-05T00:00:00Z', end_reason: 'user_exit' })
      .where('id', '=', seeded.sessionId)
      .execute();
    const outcome = await rotate(TENANT, seeded, 'after end');
    const parent = await getSession(testDb.db, TENANT, seeded.sessionId);
    expect(parent?.end_reason).toBe('user_exit');
    expect(parent?.ended_at?.toISOString()).toBe('2030-05-05T00:00:00.000Z');
    expect((await getSession(testDb.db, TENANT, outcome.sessionId))?.parent_session_id).toBe(seeded.sessionId);
  });

  it('is idempotent: committing the same compaction again returns the stored outcome and creates nothing', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: 'Again' });
    const rows = seeded.rows;
    const compactionId = await newCompaction(testDb.db, seeded, { inPlace: false });
    const input = {
      oldSessionId: seeded.sessionId,
      newSessionId: uniqueId('rot'),
      compactionId,
      expectedRowIds: rows.map((r) => r.id),
      output: [user(summaryText('x')), history[3]!],
      summaryIndex: 0,
      summaryBody: 'x',
      fallbackUsed: true,
      stats: statsFor('x', true),
    };
    const first = await commitRotation(testDb.db, TENANT, input);
    // A retry with another generated id (or the same) still returns the first outcome.
    const second = await commitRotation(testDb.db, TENANT, { ...input, newSessionId: uniqueId('rot') });
    expect(second).toEqual({ ...first, alreadyCommitted: true });
    expect(first.status).toBe('fallback');
    const sessions = await listConversationSessions(testDb.db, TENANT, seeded.conversationId);
    expect(sessions.map((s) => s.title)).toEqual(['Again', 'Again #2']);
    const count = await withTenant(testDb.db, TENANT, (tx) =>
      sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM events WHERE compaction_id = ${compactionId} AND type = 'session:compress'`.execute(
        tx,
      ),
    );
    expect(count.rows[0]?.n).toBe(1);
    expect(await loadRowsByIds(testDb.db, TENANT, first.insertedRowIds)).toHaveLength(2);
  });

  it('throws TranscriptChangedError and creates no session when the old transcript changed', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: 'Changed' });
    const compactionId = await newCompaction(testDb.db, seeded, { inPlace: false });
    const newSessionId = uniqueId('rot');
    await expect(
      commitRotation(testDb.db, TENANT, {
        oldSessionId: seeded.sessionId,
        newSessionId,
        compactionId,
        expectedRowIds: seeded.rows.slice(1).map((r) => r.id),
        output: [user('x')],
        summaryIndex: 0,
        summaryBody: 'x',
        fallbackUsed: false,
        stats: statsFor('x'),
      }),
    ).rejects.toBeInstanceOf(TranscriptChangedError);
    expect(await getSession(testDb.db, TENANT, newSessionId)).toBeUndefined();
    expect((await getSession(testDb.db, TENANT, seeded.sessionId))?.ended_at).toBeNull();
  });
});
