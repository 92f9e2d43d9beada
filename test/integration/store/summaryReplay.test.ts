// Replacing a replayed fallback summary (SPEC §13.7) on the real PostgreSQL.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import { commitInPlace, commitRotation, replaceReplayedSummary } from '../../../infra/db/compactionCommit/index.js';
import { getCompaction } from '../../../infra/db/compactions.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { listMessages, loadRowsByIds, loadTranscript } from '../../../infra/db/messages.js';
import { CompactionNotReplayableError } from '../../../infra/db/storeErrors.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import {
  assistant,
  newCompaction,
  type SeededSession,
  seedSession,
  statsFor,
  summaryText,
  uniqueId,
  user,
} from './storeFixtures.js';

let testDb: TestDatabase;
const TENANT = 'tenant-replay';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

const history: ChatMessage[] = [
  user('set up the project'),
  assistant('created the repo'),
  user('add CI'),
  assistant('CI added'),
  user('what next?'),
];

/** Commits a compaction of the whole current transcript into `output` (summary at `summaryIndex`). */
async function commit(
  seeded: SeededSession,
  output: ChatMessage[],
  summaryIndex: number,
  body: string,
  fallbackUsed = true,
  seq = 1,
) {
  const rows = await loadTranscript(testDb.db, seeded.tenantId, seeded.sessionId);
  const compactionId = await newCompaction(testDb.db, seeded, { seq });
  const outcome = await commitInPlace(testDb.db, seeded.tenantId, {
    sessionId: seeded.sessionId,
    compactionId,
    expectedRowIds: rows.map((r) => r.id),
    output,
    summaryIndex,
    summaryBody: body,
    fallbackUsed,
    stats: statsFor(body, fallbackUsed),
  });
  return { compactionId, outcome };
}

const replay = (compactionId: string, body: string) =>
  replaceReplayedSummary(testDb.db, TENANT, {
    compactionId,
    newSummaryText: summaryText(body),
    newSummaryBody: body,
  });

describe('replaceReplayedSummary', () => {
  it('standalone: the fallback row is archived and a new row with the new summary takes its position', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const output = [user('set up the project'), assistant(summaryText('fallback body')), user('what next?')];
    const { compactionId, outcome } = await commit(seeded, output, 1, 'fallback body');

    const result = await replay(compactionId, 'LLM body');
    expect(result).toMatchObject({ applied: true, sessionId: seeded.sessionId });
    expect(result.reason).toBeUndefined();

    const after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual([output[0], assistant(summaryText('LLM body')), output[2]]);
    expect(after[1]).toMatchObject({ id: result.summaryRowId, position: 1, summaryBody: 'LLM body', compactionId });
    const [old] = await loadRowsByIds(testDb.db, TENANT, [outcome.summaryRowId!]);
    expect(old).toMatchObject({ active: false, compacted: true, summaryBody: 'fallback body' });

    const record = await getCompaction(testDb.db, TENANT, compactionId);
    expect(record).toMatchObject({
      status: 'committed',
      replayable: false,
      summary: summaryText('LLM body'),
      summary_body: 'LLM body',
    });
    expect(record?.stats).toMatchObject({
      replay: { applied: true, previousSummaryRowId: outcome.summaryRowId, summaryRowId: result.summaryRowId },
      commit: { summaryRowId: result.summaryRowId },
    });
    expect(record?.stats?.replay).toHaveProperty('replayedAt', expect.any(String));

    // Repeating the same replay (activity retry) changes nothing and reports the same outcome.
    const rowsBefore = await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true });
    expect(await replay(compactionId, 'LLM body')).toEqual(result);
    expect(await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true })).toEqual(rowsBefore);
    // Another replay of a compaction that is no longer replayable is refused.
    await expect(replay(compactionId, 'third body')).rejects.toBeInstanceOf(CompactionNotReplayableError);
  });

  it('merged into a string row: the own content after the summary is kept', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const output = [assistant('created the repo'), user(`${summaryText('fb')}\n\nwhat next?`)];
    const { compactionId } = await commit(seeded, output, 1, 'fb');
    expect((await replay(compactionId, 'better')).applied).toBe(true);
    const after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after.map((r) => r.message)).toEqual([output[0], user(`${summaryText('better')}\n\nwhat next?`)]);
  });

  it('merged into an array row: the first text part is replaced, the other parts are kept', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const merged = {
      role: 'user',
      content: [
        { type: 'text', text: summaryText('fb') },
        { type: 'image_url', image_url: { url: 'http://img/1.png' } },
        { type: 'text', text: 'what is in this picture?' },
      ],
      client_ref: 7,
    } as ChatMessage;
    const { compactionId } = await commit(seeded, [assistant('created the repo'), merged], 1, 'fb');
    expect((await replay(compactionId, 'better')).applied).toBe(true);
    const after = await loadTranscript(testDb.db, TENANT, seeded.sessionId);
    expect(after[1]?.message).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: summaryText('better') },
        { type: 'image_url', image_url: { url: 'http://img/1.png' } },
        { type: 'text', text: 'what is in this picture?' },
      ],
      client_ref: 7,
    });
  });

  it('not the latest committed compaction: the transcript is left alone, the new summary is recorded', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const first = await commit(seeded, [assistant(summaryText('fb')), user('what next?')], 0, 'fb');
    await appendMessages(testDb.db, TENANT, seeded.sessionId, [{ message: assistant('more'), idempotencyKey: 'm' }]);
    const secondOutput = [user(summaryText('second')), assistant('more')];
    await commit(seeded, secondOutput, 0, 'second', false, 2);
    const before = await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true });

    const result = await replay(first.compactionId, 'late LLM body');
    expect(result).toEqual({ applied: false, reason: 'not_latest', sessionId: seeded.sessionId });
    expect(await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true })).toEqual(before);
    const record = await getCompaction(testDb.db, TENANT, first.compactionId);
    expect(record).toMatchObject({ status: 'fallback', summary_body: 'fb', replayable: false });
    expect(record?.stats?.replay).toMatchObject({
      applied: false,
      reason: 'not_latest',
      summary: summaryText('late LLM body'),
      summaryBody: 'late LLM body',
    });
  });

  it('summary row no longer active (removed by another feature): not applied, recorded', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const { compactionId, outcome } = await commit(seeded, [assistant(summaryText('fb')), user('what next?')], 0, 'fb');
    await withTenant(testDb.db, TENANT, (tx) =>
      tx.updateTable('message_state').set({ active: false }).where('message_id', '=', outcome.summaryRowId!).execute(),
    );
    const before = await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true });
    const result = await replay(compactionId, 'new');
    expect(result).toEqual({ applied: false, reason: 'summary_row_inactive', sessionId: seeded.sessionId });
    expect(await listMessages(testDb.db, TENANT, seeded.sessionId, { includeInactive: true })).toEqual(before);
    expect((await getCompaction(testDb.db, TENANT, compactionId))?.stats?.replay).toMatchObject({
      applied: false,
      reason: 'summary_row_inactive',
      summaryBody: 'new',
    });
  });

  it('after a rotation the summary row lives in the new session', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history, { title: 'Replay rotation' });
    const compactionId = await newCompaction(testDb.db, seeded, { inPlace: false });
    const rotated = await commitRotation(testDb.db, TENANT, {
      oldSessionId: seeded.sessionId,
      newSessionId: uniqueId('rot'),
      compactionId,
      expectedRowIds: seeded.rows.map((r) => r.id),
      output: [assistant(summaryText('fb')), user('what next?')],
      summaryIndex: 0,
      summaryBody: 'fb',
      fallbackUsed: true,
      stats: statsFor('fb', true),
    });
    const result = await replay(compactionId, 'rotated LLM body');
    expect(result).toMatchObject({ applied: true, sessionId: rotated.sessionId });
    const after = await loadTranscript(testDb.db, TENANT, rotated.sessionId);
    expect(after.map((r) => r.message)).toEqual([assistant(summaryText('rotated LLM body')), user('what next?')]);
    expect((await loadTranscript(testDb.db, TENANT, seeded.sessionId)).map((r) => r.message)).toEqual(history);
  });

  it('refuses a compaction that did not use the fallback summary', async () => {
    const seeded = await seedSession(testDb.db, TENANT, history);
    const { compactionId } = await commit(seeded, [assistant(summaryText('llm')), user('what next?')], 0, 'llm', false);
    await expect(replay(compactionId, 'x')).rejects.toBeInstanceOf(CompactionNotReplayableError);
  });
});
