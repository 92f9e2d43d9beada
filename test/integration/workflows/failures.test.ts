// Summary failures (SPEC §9), replay of failed compactions (SPEC §13.7) and rotation (SPEC §13.3) on the real
// services. Nothing is ever lost: every case checks the stored rows, not only the reported status.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SUMMARY_PREFIX, type Summarizer } from '../../../engine/index.js';
import { listCompactions } from '../../../infra/db/compactions.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { getSession } from '../../../infra/db/sessions.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import {
  activeTranscript,
  agentTranscript,
  allRows,
  batch,
  compactionsOf,
  eventsOf,
  expectTranscriptInvariants,
  newTenant,
} from './transcript.js';

const SECRET = 'kaboom-provider-diagnostic-7f3a';
let mode: 'good' | 'throw' | 'empty' = 'good';
let calls = 0;
const summarizer: Summarizer = async (req) => {
  calls += 1;
  if (mode === 'throw') throw new Error(`${SECRET}: upstream 503`);
  if (mode === 'empty') return '   ';
  return `## Goal\nReplayable summary of ${req.turnCount} turns.\n## Progress\n### Done\n- rounds summarised`;
};

let testDb: TestDatabase;
let stack: TestStack;
beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

const tenant = (policy: Record<string, unknown> = {}) => newTenant(testDb.db, policy);

const MODEL = { model: 'acme-chat', contextLength: 200_000, title: 'Fix bug' };

describe('summarizer failure', () => {
  it('throwing after its retries → fallback summary, error text nowhere in the transcript, nothing lost', async () => {
    mode = 'throw';
    calls = 0;
    const t = await tenant();
    const conv = randomUUID();
    const messages = agentTranscript(8);
    await stack.client.submit(t, conv, batch(messages), MODEL);
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('fallback');
    expect(result.notice).toBe(
      '⚠ Summary generation failed; earlier turns were compacted with a basic fallback summary. The original messages remain stored and searchable.',
    );
    expect(calls).toBe(3); // SPEC §9.2: at most 3 attempts
    const status = await stack.client.status(t, conv);
    const transcript = (await loadTranscript(testDb.db, t, status.sessionId)).map((r) => r.message);
    expectTranscriptInvariants(await activeTranscript(testDb.db, t, status.sessionId), transcript);
    const all = JSON.stringify(transcript);
    expect(all).toContain('Failure class: error.');
    expect(all).not.toContain(SECRET);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ status: 'fallback', replayable: true, failure_class: 'error', attempts: 3 });
    expect(record!.error).toContain(SECRET);
    // Every original row still exists.
    expect((await allRows(testDb.db, t)).slice(0, messages.length).map((r) => r.content)).toEqual(
      messages.map((m) => m.content),
    );
  });

  it('an empty reply is not retried and is a failure of class empty', async () => {
    mode = 'empty';
    calls = 0;
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('fallback');
    expect(calls).toBe(1);
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ failure_class: 'empty' });
  });

  it('abort_on_summary_failure → aborted, the transcript exactly as it was, no event', async () => {
    mode = 'throw';
    const t = await tenant({ abort_on_summary_failure: true });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const status = await stack.client.sync(t, conv);
    const before = await activeTranscript(testDb.db, t, status.sessionId);
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('aborted');
    expect(result.notice).toBe(
      '⚠ Compression aborted: the summary could not be generated. No messages were dropped; the conversation continues uncompressed.',
    );
    expect(await activeTranscript(testDb.db, t, status.sessionId)).toEqual(before);
    expect(await eventsOf(testDb.db, t)).toEqual([]);
    expect((await stack.client.status(t, conv)).compressionCount).toBe(0);
    expect(await compactionsOf(testDb.db, t)).toMatchObject([{ status: 'aborted', failure_class: 'error' }]);
  });
});

describe('replay of failed compactions', () => {
  it('an aborted compaction is refused at once as not replayable: no summarizer call, no retries (issue #9 §3)', async () => {
    mode = 'throw';
    const t = await tenant({ abort_on_summary_failure: true });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const aborted = await stack.client.compact(t, conv);
    expect(aborted.status).toBe('aborted');
    mode = 'good';
    const before = calls;
    const replay = await stack.client.replayCompaction(t, aborted.compactionId).catch((err: Error) => err);
    expect(replay).toBeInstanceOf(Error);
    let root = replay as Error;
    while (root.cause instanceof Error) root = root.cause;
    expect(root.message).toContain("ended 'aborted': nothing was committed, so there is no summary to replace");
    expect(calls).toBe(before);
    // The refusal is non-retryable: the replay workflow's first activity failed once, not eight times.
    const handle = stack.temporal.client.workflow.list({ query: `WorkflowId STARTS_WITH 'replay:${t}:'` });
    const attempts: number[] = [];
    for await (const info of handle) {
      const history = await stack.temporal.client.workflow.getHandle(info.workflowId, info.runId).fetchHistory();
      for (const e of history.events ?? []) {
        if (e.activityTaskStartedEventAttributes) attempts.push(e.activityTaskStartedEventAttributes.attempt ?? 0);
      }
    }
    expect(attempts).toEqual([1]);
  });

  it('lists fallback compactions per tenant and replays one into the live transcript', async () => {
    mode = 'throw';
    const t = await tenant();
    const other = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const failed = await stack.client.compact(t, conv);
    expect(failed.status).toBe('fallback');
    expect(
      (await listCompactions(testDb.db, t, { status: ['fallback', 'failed', 'aborted'] })).map((c) => c.id),
    ).toEqual([failed.compactionId]);
    expect(await listCompactions(testDb.db, other, { status: ['fallback'] })).toEqual([]);

    mode = 'good';
    const replay = await stack.client.replayCompaction(t, failed.compactionId);
    expect(replay.status).toBe('replaced');
    const status = await stack.client.status(t, conv);
    const live = await activeTranscript(testDb.db, t, status.sessionId);
    const transcript = (await loadTranscript(testDb.db, t, status.sessionId)).map((r) => r.message);
    expectTranscriptInvariants(live, transcript);
    const summaryRow = live.find((r) => r.summary_body !== null)!;
    expect(summaryRow.summary_body).toBe(replay.summaryBody);
    expect(summaryRow.content ?? JSON.stringify(transcript)).toContain(
      `${SUMMARY_PREFIX}\n## Goal\nReplayable summary`,
    );
    expect(JSON.stringify(transcript)).not.toContain('Summary generation was unavailable');
    const [record] = await compactionsOf(testDb.db, t);
    expect(record).toMatchObject({ replayable: false, summary_body: replay.summaryBody });
    // The fallback row is archived, not deleted.
    const archived = (await allRows(testDb.db, t)).filter(
      (r) => !r.active && (r.content ?? '').includes('Summary generation was unavailable'),
    );
    expect(archived).toHaveLength(1);
    // The live engine took the new summary as previousSummary: the next compaction is an iterative update of it.
    await stack.client.submit(t, conv, batch(agentTranscript(6, { tag: 'later' }).slice(1)), MODEL);
    await stack.client.compact(t, conv);
    const records = await compactionsOf(testDb.db, t);
    expect(records[1]!.previous_summary).toBe(replay.summaryBody);
  });

  it('a compaction that is no longer the latest gets its summary recorded without touching the transcript', async () => {
    mode = 'throw';
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const first = await stack.client.compact(t, conv);
    mode = 'good';
    await stack.client.submit(t, conv, batch(agentTranscript(6, { tag: 'more' }).slice(1)), MODEL);
    const second = await stack.client.compact(t, conv);
    expect([first.status, second.status]).toEqual(['fallback', 'committed']);
    const status = await stack.client.status(t, conv);
    const before = await activeTranscript(testDb.db, t, status.sessionId);
    const replay = await stack.client.replayCompaction(t, first.compactionId);
    expect(replay.status).toBe('recorded');
    expect(replay.reason).toBe('not_latest');
    expect(await activeTranscript(testDb.db, t, status.sessionId)).toEqual(before);
  });
});

describe('rotation (compression.in_place: false)', () => {
  it('builds lineage: new session with parent, title #2, old session ended with reason compression', async () => {
    mode = 'good';
    const t = await tenant({ in_place: false });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), MODEL);
    const oldSession = (await stack.client.sync(t, conv)).sessionId;
    const result = await stack.client.compact(t, conv);
    expect(result.status).toBe('committed');
    expect(result.sessionId).not.toBe(oldSession);
    expect(result.sessionId).toMatch(/^\d{8}_\d{6}_[0-9a-f]{6}$/);
    const fresh = await getSession(testDb.db, t, result.sessionId);
    const old = await getSession(testDb.db, t, oldSession);
    expect(fresh).toMatchObject({ parent_session_id: oldSession, title: 'Fix bug #2', compression_count: 1 });
    expect(old).toMatchObject({ end_reason: 'compression' });
    expect(old!.ended_at).not.toBeNull();
    // The old session's rows are untouched and the new messages go to the new session.
    expect((await activeTranscript(testDb.db, t, oldSession)).length).toBe(33);
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'continue in the new session' }]), MODEL);
    const status = await stack.client.sync(t, conv);
    expect(status.sessionId).toBe(result.sessionId);
    const live = await activeTranscript(testDb.db, t, result.sessionId);
    expect(live.at(-1)?.content).toBe('continue in the new session');
    const [event] = await eventsOf(testDb.db, t);
    expect(event!.payload).toMatchObject({ in_place: false, old_session_id: oldSession, session_id: result.sessionId });
  });
});
