// In-place commit of a compaction (SPEC §13.2, §13.5, §13.6) on the real PostgreSQL.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SYSTEM_NOTE } from '../../../engine/constants.js';
import { estimateMessageTokensRough } from '../../../engine/tokens.js';
import type { ChatMessage } from '../../../engine/types.js';
import { commitInPlace, type InPlaceCommit, SESSION_COMPRESS_EVENT } from '../../../infra/db/compactionCommit/index.js';
import { getCompaction } from '../../../infra/db/compactions.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { listMessages, loadRowsByIds, loadTranscript, selectWithState } from '../../../infra/db/messages.js';
import { getSession } from '../../../infra/db/sessions.js';
import { CompactionNotFoundError, TranscriptChangedError } from '../../../infra/db/storeErrors.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import {
  assistant,
  newCompaction,
  type SeededSession,
  seedSession,
  statsFor,
  summaryText,
  system,
  toolCall,
  toolResult,
  user,
} from './storeFixtures.js';

let testDb: TestDatabase;
const TENANT = 'tenant-inplace';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

const transcript: ChatMessage[] = [
  system('You are an agent.'),
  user('please investigate the flamingo outage'),
  toolCall('c1', 'shell', '{"cmd":"kubectl logs flamingo"}'),
  toolResult('c1', 'OOMKilled flamingo-7', 'shell'),
  assistant('the flamingo pod was OOM killed'),
  user('raise the memory limit'),
  assistant('done, limit is now 2Gi'),
  user('now check the heron service'),
];

/** A compaction output: edited system prompt, standalone summary, the last three rows carried. */
function compacted(body: string): { output: ChatMessage[]; summaryIndex: number } {
  return {
    output: [
      system(`You are an agent.\n\n${SYSTEM_NOTE}`),
      assistant(summaryText(body)),
      user('raise the memory limit'),
      assistant('done, limit is now 2Gi'),
      user('now check the heron service'),
    ],
    summaryIndex: 1,
  };
}

async function events(tenantId: string, compactionId: string) {
  return withTenant(testDb.db, tenantId, (tx) =>
    tx
      .selectFrom('events')
      .selectAll()
      .where('compaction_id', '=', compactionId)
      .where('type', '=', 'session:compress')
      .execute(),
  );
}

async function allRows(seeded: SeededSession) {
  return listMessages(testDb.db, seeded.tenantId, seeded.sessionId, { includeInactive: true });
}

/** The commit of `compacted(body)` over every row of `seeded`. */
function commitOf(seeded: SeededSession, compactionId: string, body: string, fallbackUsed = false): InPlaceCommit {
  return {
    sessionId: seeded.sessionId,
    compactionId,
    expectedRowIds: seeded.rows.map((r) => r.id),
    ...compacted(body),
    summaryBody: body,
    fallbackUsed,
    stats: statsFor(body, fallbackUsed),
  };
}

describe('commitInPlace', () => {
  it('carries matched rows, archives the rest, inserts the new ones: the transcript reads back as the output', async () => {
    const seeded = await seedSession(testDb.db, TENANT, transcript, { source: 'telegram' });
    const compactionId = await newCompaction(testDb.db, seeded);
    const { output, summaryIndex } = compacted('Investigated the flamingo outage.');
    const oldIds = seeded.rows.map((r) => r.id);

    const outcome = await commitInPlace(testDb.db, TENANT, {
      sessionId: seeded.sessionId,
      compactionId,
      expectedRowIds: oldIds,
      output,
      summaryIndex,
      summaryBody: 'Investigated the flamingo outage.',
      fallbackUsed: false,
      stats: statsFor('Investigated the flamingo outage.'),
      platform: 'telegram',
    });

    // After the commit, the active rows in position order are exactly the output.
    const after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual(output);
    expect(after.map((r) => r.position)).toEqual([0, 1, 2, 3, 4]);

    // Carried rows keep their ids (not re-inserted): exactly one live copy each.
    expect(after.slice(2).map((r) => r.id)).toEqual(oldIds.slice(5));
    const live = await allRows(seeded);
    for (const text of ['raise the memory limit', 'done, limit is now 2Gi', 'now check the heron service']) {
      expect(live.filter((r) => r.active && r.message.content === text)).toHaveLength(1);
    }

    // Archived rows: inactive, compacted, tagged with the compaction; every original message still retrievable.
    expect(outcome.compactedRowIds).toEqual(oldIds.slice(0, 5));
    const originals = await loadRowsByIds(testDb.db, TENANT, oldIds);
    expect(originals.map((r) => r.message)).toEqual(transcript);
    for (const row of originals.slice(0, 5)) {
      expect(row).toMatchObject({ active: false, compacted: true, compactionId });
    }

    // New rows: active, not compacted, tagged; the summary row carries summary_body.
    const inserted = await loadRowsByIds(testDb.db, TENANT, outcome.insertedRowIds);
    expect(inserted.map((r) => [r.position, r.active, r.compacted, r.compactionId])).toEqual([
      [0, true, false, compactionId],
      [1, true, false, compactionId],
    ]);
    expect(inserted[1]?.summaryBody).toBe('Investigated the flamingo outage.');
    expect(inserted[0]?.summaryBody).toBeNull();
    expect(outcome.summaryRowId).toBe(inserted[1]?.id);
    expect(outcome).toMatchObject({ status: 'committed', inPlace: true, oldSessionId: '', compressionCount: 1 });

    // Session, record and event.
    expect((await getSession(testDb.db, TENANT, seeded.sessionId))?.compression_count).toBe(1);
    const record = await getCompaction(testDb.db, TENANT, compactionId);
    expect(record).toMatchObject({
      status: 'committed',
      replayable: false,
      fallback_used: false,
      in_place: true,
      new_session_id: null,
      summary: summaryText('Investigated the flamingo outage.'),
      summary_body: 'Investigated the flamingo outage.',
      compacted_row_ids: oldIds.slice(0, 5),
    });
    expect(record?.completed_at).toBeInstanceOf(Date);
    expect(record?.stats).toMatchObject({ tokensBefore: 1000, droppedCount: 3 });
    const emitted = await events(TENANT, compactionId);
    expect(emitted).toHaveLength(1);
    expect(emitted[0]).toMatchObject({ type: SESSION_COMPRESS_EVENT, session_id: seeded.sessionId });
    expect(emitted[0]?.payload).toEqual({
      platform: 'telegram',
      session_id: seeded.sessionId,
      old_session_id: '',
      in_place: true,
      compression_count: 1,
    });
  });

  it('archived rows stay discoverable by their indexed text, once per message', async () => {
    const seeded = await seedSession(testDb.db, 'tenant-search', transcript);
    const compactionId = await newCompaction(testDb.db, seeded);
    await commitInPlace(testDb.db, seeded.tenantId, commitOf(seeded, compactionId, 'body'));
    const search = (pattern: string) =>
      withTenant(testDb.db, seeded.tenantId, (tx) =>
        selectWithState(tx, seeded.tenantId)
          .select(['m.id', 's.active', 's.compacted'])
          .where('m.indexed_text', 'ilike', pattern)
          .where((eb) => eb.or([eb('s.active', '=', true), eb('s.compacted', '=', true)]))
          .execute(),
      );
    expect(await search('%flamingo pod was OOM%')).toEqual([
      expect.objectContaining({ active: false, compacted: true }),
    ]);
    expect(await search('%kubectl logs%')).toHaveLength(1); // tool call arguments of an archived row
    expect(await search('%heron service%')).toEqual([expect.objectContaining({ active: true, compacted: false })]);
  });

  it('never rewrites a messages row: archived and moved rows keep their row version (DESIGN.md §4)', async () => {
    const seeded = await seedSession(testDb.db, TENANT, transcript);
    const compactionId = await newCompaction(testDb.db, seeded);
    // xmin: the transaction that wrote the row version. An UPDATE of the row, even one that changes nothing, writes a
    // new version (recomputing the generated search columns and adding index entries), which would change it.
    const versions = async () =>
      (
        await sql<{ id: number; xmin: string }>`
          SELECT id, xmin::text AS xmin FROM messages WHERE id = ANY(${seeded.rows.map((r) => r.id)}::bigint[])
           ORDER BY id`.execute(testDb.db)
      ).rows;
    const before = await versions();
    const outcome = await commitInPlace(testDb.db, TENANT, commitOf(seeded, compactionId, 'versions'));
    expect(outcome.compactedRowIds).toHaveLength(5);
    expect(await versions()).toEqual(before);
    // The state did change: five rows archived, the last three moved from positions 5–7 to 2–4.
    const rows = await listMessages(testDb.db, TENANT, seeded.sessionId, { includeArchived: true });
    const old = rows.filter((r) => seeded.rows.some((s) => s.id === r.id));
    expect(old.map((r) => [r.active, r.compacted, r.position])).toEqual([
      ...[0, 1, 2, 3, 4].map((p) => [false, true, p]),
      [true, false, 2],
      [true, false, 3],
      [true, false, 4],
    ]);
  });

  it('is idempotent by compaction id: a second commit changes nothing and emits no second event', async () => {
    const seeded = await seedSession(testDb.db, TENANT, transcript);
    const compactionId = await newCompaction(testDb.db, seeded);
    const input = commitOf(seeded, compactionId, 'once', true);
    const first = await commitInPlace(testDb.db, TENANT, input);
    const rowsAfterFirst = await allRows(seeded);
    const recordAfterFirst = await getCompaction(testDb.db, TENANT, compactionId);

    const second = await commitInPlace(testDb.db, TENANT, input);
    expect(second).toEqual({ ...first, alreadyCommitted: true });
    expect(await allRows(seeded)).toEqual(rowsAfterFirst);
    expect(await getCompaction(testDb.db, TENANT, compactionId)).toEqual(recordAfterFirst);
    expect((await getSession(testDb.db, TENANT, seeded.sessionId))?.compression_count).toBe(1);
    expect(await events(TENANT, compactionId)).toHaveLength(1);
    expect(first).toMatchObject({ status: 'fallback' });
    expect(recordAfterFirst).toMatchObject({ status: 'fallback', replayable: true, fallback_used: true });
  });

  it('keeps the rows appended after the compaction read the transcript, after the output, in order', async () => {
    const seeded = await seedSession(testDb.db, TENANT, transcript);
    const compactionId = await newCompaction(testDb.db, seeded);
    await appendMessages(testDb.db, TENANT, seeded.sessionId, [
      { message: assistant('late reply'), idempotencyKey: 'late' },
      { message: user('and one more thing'), idempotencyKey: 'later' },
    ]);
    const { output, summaryIndex } = compacted('read before the late rows');
    const outcome = await commitInPlace(testDb.db, TENANT, {
      sessionId: seeded.sessionId,
      compactionId,
      expectedRowIds: seeded.rows.map((r) => r.id),
      output,
      summaryIndex,
      summaryBody: 'read before the late rows',
      fallbackUsed: false,
      stats: statsFor('read before the late rows'),
    });
    expect(outcome.keptSinceRowIds).toHaveLength(2);
    const live = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(live.map((r) => r.message)).toEqual([...output, assistant('late reply'), user('and one more thing')]);
    expect(live.map((r) => r.position)).toEqual(live.map((_, i) => i));
    expect(live.slice(-2).map((r) => r.id)).toEqual(outcome.keptSinceRowIds);
  });

  it('throws TranscriptChangedError and writes nothing when rows it read are no longer the live head', async () => {
    const seeded = await seedSession(testDb.db, TENANT, transcript);
    const first = await newCompaction(testDb.db, seeded, { seq: 1 });
    const stale = await newCompaction(testDb.db, seeded, { seq: 2 });
    const commit = (compactionId: string, body: string) =>
      commitInPlace(testDb.db, TENANT, {
        sessionId: seeded.sessionId,
        compactionId,
        expectedRowIds: seeded.rows.map((r) => r.id),
        ...compacted(body),
        summaryBody: body,
        fallbackUsed: false,
        stats: statsFor(body),
      });
    await commit(first, 'first');
    const before = await allRows(seeded);

    const attempt = commit(stale, 'stale');
    await expect(attempt).rejects.toBeInstanceOf(TranscriptChangedError);
    await expect(attempt).rejects.toMatchObject({ name: 'TranscriptChangedError' });

    expect(await allRows(seeded)).toEqual(before);
    expect((await getCompaction(testDb.db, TENANT, stale))?.status).toBe('pending');
    expect(await events(TENANT, stale)).toHaveLength(0);
    expect((await getSession(testDb.db, TENANT, seeded.sessionId))?.compression_count).toBe(1);
  });

  it('matches duplicates greedily in order (smallest unmatched row at or after the pointer)', async () => {
    const rows = [user('hi'), assistant('ok'), user('hi'), assistant('ok'), user('go')];
    const seeded = await seedSession(testDb.db, TENANT, rows);
    const compactionId = await newCompaction(testDb.db, seeded);
    const output = [user(summaryText('b')), assistant('ok'), user('hi'), assistant('ok'), user('go')];
    const outcome = await commitInPlace(testDb.db, TENANT, {
      sessionId: seeded.sessionId,
      compactionId,
      expectedRowIds: seeded.rows.map((r) => r.id),
      output,
      summaryIndex: 0,
      summaryBody: 'b',
      fallbackUsed: false,
      stats: statsFor('b'),
    });
    const after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual(output);
    // 'ok' → row 1 (p = 2), 'hi' → row 2, 'ok' → row 3, 'go' → row 4; row 0 is archived.
    const ids = seeded.rows.map((r) => r.id);
    expect(after.slice(1).map((r) => r.id)).toEqual([ids[1], ids[2], ids[3], ids[4]]);
    expect(outcome.compactedRowIds).toEqual([ids[0]]);
  });

  it('a merged summary row is new; carried rows take the output extras; a later compaction archives the summary', async () => {
    const rows: ChatMessage[] = [
      user('start'),
      assistant('a1'),
      user('u2'),
      { role: 'assistant', content: 'a2', reasoning: 'old' } as ChatMessage,
      user('latest request'),
    ];
    const seeded = await seedSession(testDb.db, TENANT, rows);
    const first = await newCompaction(testDb.db, seeded);
    const merged = user(`${summaryText('one')}\n\nstart`);
    const output1: ChatMessage[] = [
      merged,
      { role: 'assistant', content: 'a2', reasoning: 'new, and much longer than the old one' } as ChatMessage,
      user('latest request'),
    ];
    const outcome1 = await commitInPlace(testDb.db, TENANT, {
      sessionId: seeded.sessionId,
      compactionId: first,
      expectedRowIds: seeded.rows.map((r) => r.id),
      output: output1,
      summaryIndex: 0,
      summaryBody: 'one',
      fallbackUsed: false,
      stats: statsFor('one'),
    });
    let after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual(output1);
    expect(after[1]?.id).toBe(seeded.rows[3]?.id);
    // The carried row's token estimate follows its new runtime properties (the totals sum these).
    expect(after.map((r) => r.tokenEstimate)).toEqual(output1.map(estimateMessageTokensRough));
    expect(seeded.rows[3]?.tokenEstimate).not.toBe(after[1]?.tokenEstimate);
    expect(after[0]).toMatchObject({ id: outcome1.summaryRowId, summaryBody: 'one' });

    await appendMessages(testDb.db, TENANT, seeded.sessionId, [{ message: assistant('reply'), idempotencyKey: 'r' }]);
    const current = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    const second = await newCompaction(testDb.db, seeded, { seq: 2 });
    const output2 = [user(summaryText('two')), assistant('reply')];
    const outcome2 = await commitInPlace(testDb.db, TENANT, {
      sessionId: seeded.sessionId,
      compactionId: second,
      expectedRowIds: current.map((r) => r.id),
      output: output2,
      summaryIndex: 0,
      summaryBody: 'two',
      fallbackUsed: false,
      stats: statsFor('two'),
    });
    after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual(output2);
    expect(outcome2.compressionCount).toBe(2);
    expect(outcome2.compactedRowIds).toContain(outcome1.summaryRowId);
    const [oldSummary] = await loadRowsByIds(testDb.db, TENANT, [outcome1.summaryRowId!]);
    expect(oldSummary).toMatchObject({ active: false, compacted: true, summaryBody: 'one' });
  });

  it('given the messages the compaction read, commits exactly what a commit that reads the rows again commits', async () => {
    // A row PostgreSQL cannot store as text (kept as raw JSON), runtime properties, a name on a user row.
    const rows: ChatMessage[] = [
      system('You are an agent.'),
      { role: 'user', content: 'hello from\u0000a terminal', name: 'ops' } as ChatMessage,
      { role: 'assistant', content: 'a1', reasoning: 'first' } as ChatMessage,
      user('u2'),
      { role: 'assistant', content: 'a2', reasoning: 'old', provider_extra: { id: 7 } } as ChatMessage,
      user('latest request'),
    ];
    // The summary replaces row 2 only: every carried row keeps its position, so only a change of its runtime
    // properties makes the commit rewrite it.
    const output: ChatMessage[] = [rows[0]!, rows[1]!, user(summaryText('light')), rows[3]!, rows[4]!, rows[5]!];
    const run = async (light: boolean) => {
      const seeded = await seedSession(testDb.db, TENANT, rows);
      const read = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
      expect(read.map((r) => r.message)).toEqual(rows);
      // The row's runtime properties change after the read: the commit compares the output with them as they are now.
      await withTenant(testDb.db, TENANT, (tx) =>
        tx
          .updateTable('messages')
          .set({ extra: JSON.stringify({ reasoning: 'mid' }) })
          .where('id', '=', read[4]!.id)
          .execute(),
      );
      const compactionId = await newCompaction(testDb.db, seeded);
      await appendMessages(testDb.db, TENANT, seeded.sessionId, [{ message: assistant('late'), idempotencyKey: 'l' }]);
      const outcome = await commitInPlace(testDb.db, TENANT, {
        sessionId: seeded.sessionId,
        compactionId,
        expectedRowIds: read.map((r) => r.id),
        ...(light ? { inputMessages: read.map((r) => r.message) } : {}),
        output,
        summaryIndex: 2,
        summaryBody: 'light',
        fallbackUsed: false,
        stats: statsFor('light'),
      });
      const ids = new Map(read.map((r, i) => [r.id, `row${i}`]));
      const name = (id: number | null | undefined) => (id == null ? id : (ids.get(id) ?? 'new'));
      const every = await allRows(seeded);
      return {
        outcome: [outcome.compactedRowIds.map(name), outcome.keptSinceRowIds.length, name(outcome.summaryRowId)],
        rows: every.map((r) => [name(r.id), r.message, r.position, r.active, r.compacted, r.summaryBody, r.pinned]),
      };
    };
    const again = await run(false);
    const light = await run(true);
    expect(light).toEqual(again);
    // The carried rows: the raw row and the others keep their ids; the reasoning follows the output.
    expect(light.outcome[0]).toEqual(['row2']);
    const live = light.rows.filter((r) => r[3]).sort((a, b) => (a[2] as number) - (b[2] as number));
    expect(live.map((r) => [r[0], r[1]])).toEqual([
      ['row0', rows[0]],
      ['row1', rows[1]],
      ['new', output[2]],
      ['row3', rows[3]],
      ['row4', rows[4]],
      ['row5', rows[5]],
      ['new', assistant('late')],
    ]);
  });

  it('rejects a compaction of another session, an unknown compaction and a summary index outside the output', async () => {
    const a = await seedSession(testDb.db, TENANT, [user('a')]);
    const b = await seedSession(testDb.db, TENANT, [user('b')]);
    const compactionOfA = await newCompaction(testDb.db, a);
    const base = {
      sessionId: b.sessionId,
      expectedRowIds: b.rows.map((r) => r.id),
      output: [user('x')],
      summaryIndex: 0,
      summaryBody: 'x',
      fallbackUsed: false,
      stats: statsFor('x'),
    };
    await expect(commitInPlace(testDb.db, TENANT, { ...base, compactionId: compactionOfA })).rejects.toBeInstanceOf(
      CompactionNotFoundError,
    );
    await expect(commitInPlace(testDb.db, TENANT, { ...base, compactionId: 'nope' })).rejects.toBeInstanceOf(
      CompactionNotFoundError,
    );
    await expect(
      commitInPlace(testDb.db, TENANT, { ...base, compactionId: compactionOfA, summaryIndex: 1 }),
    ).rejects.toBeInstanceOf(RangeError);
  });

  it('commits a 10,000-row compaction: exactly the summarised rows archived, the output live in order', async () => {
    const big: ChatMessage[] = [system('sys')];
    for (let i = 0; i < 4_999; i++) {
      big.push(user(`question ${i} about the service ${'lorem ipsum '.repeat(8)}`));
      big.push(assistant(`answer ${i} ${'dolor sit amet '.repeat(8)}`));
    }
    const seeded = await seedSession(testDb.db, 'tenant-big', big);
    expect(seeded.rows).toHaveLength(9_999);
    const compactionId = await newCompaction(testDb.db, seeded);
    // Keep the last 4,000 rows, summarise the rest: 5,998 archived, 4,000 moved, 2 inserted.
    const output = [system(`sys\n\n${SYSTEM_NOTE}`), assistant(summaryText('big')), ...big.slice(-4_000)];
    // Its speed is a bench goal (npm run bench:orchestration), never a timed assertion here.
    const outcome = await commitInPlace(testDb.db, 'tenant-big', {
      sessionId: seeded.sessionId,
      compactionId,
      expectedRowIds: seeded.rows.map((r) => r.id),
      output,
      summaryIndex: 1,
      summaryBody: 'big',
      fallbackUsed: false,
      stats: statsFor('big'),
    });
    expect(outcome.compactedRowIds).toHaveLength(5_999);
    const after = await loadTranscript(testDb.db, 'tenant-big', seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual(output);
  });
});
