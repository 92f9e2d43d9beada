// Crash recovery with a real process kill (issue requirement): a worker in a child process is SIGKILLed during each
// of the compaction activities — right after the activity's database writes, before Temporal hears of its completion —
// and while the workflow publishes a batch's state. A fresh in-process worker on the same task queue finishes the work: the compaction
// commits exactly once and the transcript is exactly what an uninterrupted run produces, with no lost or duplicated
// rows. Cases run concurrently, each on its own task queue, because every recovery waits for a Temporal timeout.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CompactionResult, SubmitMessages } from '../../../contracts/conversation.js';
import { type ChatMessage, stripArchivePointer } from '../../../engine/index.js';
import { createDb } from '../../../infra/db/connect.js';
import { loadTranscript, selectWithState } from '../../../infra/db/messages.js';
import type { Database } from '../../../infra/db/schema.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { ensureTenant } from '../../../infra/db/tenants.js';
import type { ConversationStart } from '../../../workers/gateway/conversations.js';
import { compactionWorkflowId, conversationWorkflowId } from '../../../workflows/ids.js';
import { activityRuns, settledHistory, timedOutWorkflowTasks } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { FIXED_SUMMARY_BODY, fixedSummarizer } from '../../support/harness/fixedSummarizer.js';
import { exited, startWorkerProcess as startWorker, type WorkerProcess } from '../../support/harness/spawnWorker.js';
import { createTestStack, type TestStack, workflowBundle } from '../../support/harness/temporal.js';
import {
  activeTranscript,
  agentTranscript,
  allRows,
  batch,
  compactionsOf,
  eventsOf,
  expectTranscriptInvariants,
} from './transcript.js';

// Short timeouts so that a lost attempt is retried within seconds (SPEC §9.2 knobs, DESIGN §3).
const START: ConversationStart = {
  model: 'test-model-200k',
  contextLength: 200_000,
  timeouts: { phaseSeconds: 3, summaryAttemptSeconds: 5, summaryHeartbeatSeconds: 2 },
};
// The same messages in every case and in the uninterrupted control run, so the transcripts can be compared; the
// same conversation id too (each case has its own tenant), which the summary's archive pointer names (SPEC §19).
const CONVERSATION_ID = 'crash-conversation';
const FIRST = agentTranscript(12, { tag: 'crash' });
const SECOND = agentTranscript(6, { tag: 'later' }).slice(1);

let testDb: TestDatabase;
let bundleDir: string;
let bundlePath: string;
const processes = new Set<ChildProcess>();
const stacks = new Set<TestStack>();
const pools = new Set<Kysely<Database>>();

interface Control {
  /** The first compaction's committed summary body (what the control run stored). */
  first: { result: CompactionResult; transcript: ChatMessage[]; summaryBody: string };
  second: { result: CompactionResult; transcript: ChatMessage[] };
}
let control: Control;

function killAll(): void {
  for (const child of processes) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
process.once('exit', killAll);

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  // One bundle for the file: the in-process workers use it directly, the child processes read it from disk.
  const bundle = await workflowBundle();
  bundleDir = await mkdtemp(join(tmpdir(), 'dc-crash-'));
  bundlePath = join(bundleDir, 'workflow-bundle.js');
  await writeFile(bundlePath, bundle.code);
  control = await controlRun();
});

afterAll(async () => {
  killAll();
  await Promise.all([...processes].map((child) => exited(child)));
  for (const stack of stacks) await stack.close().catch(() => undefined);
  for (const pool of pools) await pool.destroy().catch(() => undefined);
  await testDb?.drop();
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------------
// Plumbing

/** A worker process on the case's task queue, on the run's services and the file's bundle, tracked for cleanup. */
function startWorkerProcess(taskQueue: string, hook: Record<string, string>): WorkerProcess {
  const proc = startWorker({
    databaseUrl: testDb.url,
    temporalAddress: inject('temporalAddress'),
    temporalNamespace: inject('temporalNamespace'),
    taskQueue,
    bundlePath,
    env: hook,
  });
  processes.add(proc.child);
  return {
    ...proc,
    kill: async () => {
      const how = await proc.kill();
      expect(how).toBe('SIGKILL');
      return how;
    },
  };
}

/** A task queue of its own with an in-process worker factory; the worker is stopped until the kill has happened. */
async function caseStack(
  conversations: { notifyEveryBatch?: boolean } = {},
): Promise<{ stack: TestStack; db: Kysely<Database> }> {
  const db = createDb({ connectionString: testDb.url, maxConnections: 4 });
  pools.add(db);
  const stack = await createTestStack({ db, summarizer: fixedSummarizer, conversations });
  stacks.add(stack);
  await stack.stopWorker();
  return { stack, db };
}

async function closeCase(stack: TestStack, db: Kysely<Database>): Promise<void> {
  await stack.close();
  stacks.delete(stack);
  await db.destroy();
  pools.delete(db);
}

async function newTenant(): Promise<string> {
  const id = `t-${randomUUID().slice(0, 8)}`;
  await ensureTenant(testDb.db, { id, name: id });
  return id;
}

/** An update that resolves later: awaited after the restart (a rejection before then is not unhandled). */
function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

async function wireTranscript(tenantId: string, sessionId: string): Promise<ChatMessage[]> {
  return (await loadTranscript(testDb.db, tenantId, sessionId)).map((r) => r.message);
}

interface KeyedRow {
  id: number;
  role: string;
  content: string | null;
  tool_call_id: string | null;
  active: boolean;
  compacted: boolean;
  position: number;
  compaction_id: string | null;
  idempotency_key: string | null;
}

async function rowsOf(tenantId: string): Promise<KeyedRow[]> {
  return withTenant(testDb.db, tenantId, (tx) =>
    selectWithState(tx, tenantId)
      .select([
        'm.id',
        'm.role',
        'm.content',
        'm.tool_call_id',
        's.active',
        's.compacted',
        's.position',
        's.compaction_id',
        'm.idempotency_key',
      ])
      .orderBy('m.id')
      .execute(),
  );
}

/** attempt of the (last) started event of each activity type in a workflow's history. */
async function activityAttempts(stack: TestStack, workflowId: string): Promise<Record<string, number>> {
  const history = await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  const names = new Map<string, string>();
  const attempts: Record<string, number> = {};
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) names.set(String(event.eventId), scheduled.activityType?.name ?? '?');
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const name = names.get(String(started.scheduledEventId)) ?? '?';
      attempts[name] = Math.max(attempts[name] ?? 0, started.attempt ?? 0);
    }
  }
  return attempts;
}

/** The wire identity of a message (role, content, tool call ids): two live rows with the same key are duplicates. */
const key = (m: ChatMessage) =>
  JSON.stringify([m.role, m.content ?? null, m.tool_call_id ?? null, (m.tool_calls ?? []).map((c) => c.id)]);

/**
 * After `compactions` committed compactions of a conversation that received `submitted` (in order): nothing lost,
 * nothing inserted twice. Every submitted message is exactly one row (by idempotency key, in order, same content),
 * every row is either live or archived, the rows a compaction inserted are exactly the ones its commit recorded, no
 * submitted message is live twice, and the live transcript satisfies the invariants of SPEC §8.9 / §13.2.
 */
async function expectExactlyOnce(tenantId: string, sessionId: string, submitted: SubmitMessages[]): Promise<void> {
  const rows = await rowsOf(tenantId);
  const items = submitted.flatMap((b) => b.messages);
  const keyed = rows.filter((r) => r.idempotency_key !== null);
  expect(keyed.map((r) => r.idempotency_key)).toEqual(items.map((i) => i.idempotencyKey));
  expect(keyed.map((r) => [r.role, r.content])).toEqual(items.map((i) => [i.message.role, i.message.content ?? null]));
  for (const r of rows) expect(r.active !== r.compacted, `row ${r.id} is live xor archived`).toBe(true);

  const records = await compactionsOf(testDb.db, tenantId);
  const inserted = new Set<number>();
  for (const record of records) {
    const note = (record.stats as { commit?: { insertedRowIds: number[] } } | null)?.commit;
    expect(note, `compaction ${record.id} recorded its commit`).toBeDefined();
    for (const id of note!.insertedRowIds) inserted.add(id);
    const archived = rows.filter((r) => r.compaction_id === record.id && r.compacted).map((r) => r.id);
    expect(archived.sort((a, b) => a - b)).toEqual(record.compacted_row_ids.map(Number).sort((a, b) => a - b));
  }
  // Every unkeyed row was inserted by a commit, and recorded as such: no stray or doubled inserts.
  expect(rows.filter((r) => r.idempotency_key === null).map((r) => r.id)).toEqual([...inserted].sort((a, b) => a - b));

  const live = await activeTranscript(testDb.db, tenantId, sessionId);
  const transcript = await wireTranscript(tenantId, sessionId);
  expectTranscriptInvariants(live, transcript);
  const liveKeys = transcript.map(key);
  for (const item of items) {
    expect(
      liveKeys.filter((k) => k === key(item.message)).length,
      `live copies of ${key(item.message)}`,
    ).toBeLessThanOrEqual(1);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The uninterrupted reference run

async function controlRun(): Promise<Control> {
  const { stack, db } = await caseStack();
  try {
    await stack.startWorker();
    const t = await newTenant();
    const conv = CONVERSATION_ID;
    await stack.client.submit(t, conv, batch(FIRST), START);
    const first = await stack.client.compact(t, conv);
    expect(first.status).toBe('committed');
    const firstTranscript = await wireTranscript(t, first.sessionId);
    const firstBody = (await compactionsOf(testDb.db, t))[0]?.summary_body ?? '';
    await stack.client.submit(t, conv, batch(SECOND), START);
    const second = await stack.client.compact(t, conv);
    expect(second.status).toBe('committed');
    return {
      first: { result: first, transcript: firstTranscript, summaryBody: firstBody },
      second: { result: second, transcript: await wireTranscript(t, second.sessionId) },
    };
  } finally {
    await closeCase(stack, db);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Cases

type Phase = 'align' | 'prune' | 'summarize' | 'reassemble';

interface CrashCase {
  name: string;
  phase: Phase;
  hook: Record<string, string>;
  /** What the compaction record holds at the moment of the kill: proves where the worker died. */
  atKill(record: Record<string, unknown>): void;
}

const notCommitted = (record: Record<string, unknown>) => {
  expect(record.status).not.toBe('committed');
  expect(record.completed_at).toBeNull();
};

const CASES: CrashCase[] = [
  // Align creates the record and stores the plan (patch `align-begins`); the retry on the new worker finds both, and
  // the later phases there read the window from the store (the killed worker's window cache is gone).
  {
    name: 'after align created the record and stored its plan',
    phase: 'align',
    hook: { PAUSE_AFTER: 'align' },
    atKill: (r) => {
      expect(r.plan).not.toBeNull();
      expect(r.prune_result).toBeNull();
      notCommitted(r);
    },
  },
  {
    name: 'after prune stored its result',
    phase: 'prune',
    hook: { PAUSE_AFTER: 'prune' },
    atKill: (r) => {
      expect(r.prune_result).not.toBeNull();
      expect(r.summary_body).toBeNull();
      notCommitted(r);
    },
  },
  {
    name: 'while the summarizer is still answering',
    phase: 'summarize',
    hook: { PAUSE_IN: 'summarize' },
    atKill: (r) => {
      expect(r.prune_result).not.toBeNull();
      expect(r.attempts).toBe(1);
      expect(r.summary_body).toBeNull();
      notCommitted(r);
    },
  },
  {
    name: 'after summarize stored the summary',
    phase: 'summarize',
    hook: { PAUSE_AFTER: 'summarize' },
    atKill: (r) => {
      // The gated summary (issue #15 §3), before reassembly adds the archive pointer (SPEC §19).
      expect(r.summary_body).toBe(stripArchivePointer(control.first.summaryBody));
      expect((r.summary_body as string).startsWith(FIXED_SUMMARY_BODY)).toBe(true);
      notCommitted(r);
    },
  },
  {
    name: 'after reassemble committed the transcript',
    phase: 'reassemble',
    hook: { PAUSE_AFTER: 'reassemble' },
    atKill: (r) => {
      expect(r.status).toBe('committed');
    },
  },
];

describe.concurrent('worker killed during a compaction phase', () => {
  for (const c of CASES) {
    it(`${c.phase}: ${c.name} → the compaction completes exactly once after a restart`, async () => {
      const { stack, db } = await caseStack();
      const proc = startWorkerProcess(stack.taskQueue, c.hook);
      try {
        const t = await newTenant();
        const conv = CONVERSATION_ID;
        const first = batch(FIRST);
        await proc.waitFor('READY');
        await stack.client.submit(t, conv, first, START);
        const before = await stack.client.sync(t, conv);
        expect(before.activeMessages).toBe(FIRST.length);

        const pending = later(stack.client.compact(t, conv));
        await proc.waitFor(`PAUSED ${c.phase}`);
        const [atKill] = await compactionsOf(testDb.db, t);
        expect(atKill).toBeDefined();
        c.atKill(atKill as unknown as Record<string, unknown>);
        await proc.kill();
        await stack.startWorker();

        const result = await pending;
        expect(result).toMatchObject({ status: 'committed', trigger: 'manual', error: null });
        expect(result.stats).toMatchObject(control.first.result.stats!);
        const records = await compactionsOf(testDb.db, t);
        expect(records.map((r) => [r.id, r.status])).toEqual([[result.compactionId, 'committed']]);
        expect(records[0]!.summary_body).toBe(control.first.summaryBody);
        const events = await eventsOf(testDb.db, t);
        expect(events.map((e) => [e.type, e.compaction_id])).toEqual([['session:compress', result.compactionId]]);
        expect(events[0]!.payload).toMatchObject({ compression_count: 1, in_place: true });
        // The killed attempt was lost and a later attempt finished the phase on the new worker.
        const attempts = await activityAttempts(stack, compactionWorkflowId(t, before.sessionId, 1));
        expect(attempts[c.phase]).toBeGreaterThanOrEqual(2);

        const status = await stack.client.status(t, conv);
        expect(status.compressionCount).toBe(1);
        expect(await wireTranscript(t, status.sessionId)).toEqual(control.first.transcript);
        expect(status.activeMessages).toBe(control.first.transcript.length);
        await expectExactlyOnce(t, status.sessionId, [first]);

        // The conversation goes on: more messages, a second manual compaction, again exactly once.
        const second = batch(SECOND);
        await stack.client.submit(t, conv, second, START);
        const again = await stack.client.compact(t, conv);
        expect(again.status).toBe('committed');
        expect(again.compactionId).not.toBe(result.compactionId);
        const after = await compactionsOf(testDb.db, t);
        expect(after.map((r) => r.status)).toEqual(['committed', 'committed']);
        expect((await eventsOf(testDb.db, t)).map((e) => e.compaction_id)).toEqual([
          result.compactionId,
          again.compactionId,
        ]);
        expect(await wireTranscript(t, again.sessionId)).toEqual(control.second.transcript);
        expect((await stack.client.status(t, conv)).compressionCount).toBe(2);
        await expectExactlyOnce(t, again.sessionId, [first, second]);
      } finally {
        await proc.kill().catch(() => undefined);
        await closeCase(stack, db);
      }
    });
  }

  it('recordState: the worker dies after publishing a batch → after a restart it is published again, applied once, nothing stored twice', async () => {
    // Every batch notified, so that each one is published (a quiet batch would need no publication at all).
    const { stack, db } = await caseStack({ notifyEveryBatch: true });
    // The workflow publishes its state at start and after the first batch; the third publication (the second batch)
    // is written and then never reported.
    const proc = startWorkerProcess(stack.taskQueue, { PAUSE_AFTER: 'recordState', PAUSE_SKIP: '2' });
    try {
      const t = await newTenant();
      const conv = randomUUID();
      const first = batch(FIRST);
      const second = batch(SECOND);
      await proc.waitFor('READY');
      await stack.client.submit(t, conv, first, START);
      expect((await stack.client.sync(t, conv)).activeMessages).toBe(FIRST.length);

      await stack.client.submit(t, conv, second, START);
      await proc.waitFor('PAUSED recordState');
      // Accepted means stored: the batch is in PostgreSQL before the workflow decided anything about it.
      expect((await allRows(testDb.db, t)).length).toBe(FIRST.length + SECOND.length);
      await proc.kill();
      await stack.startWorker();

      // The workflow goes on past the lost activity (retried on the new worker) and takes the next batch.
      const third = batch([{ role: 'user', content: 'one more question' }]);
      await stack.client.submit(t, conv, third, START);
      const status = await stack.client.sync(t, conv);
      expect(status.processedBatches).toBe(3);
      // The publication is a local activity: the dead worker's workflow task timed out and the new worker ran it
      // again (its marker is in the history), after the dead one had already written it.
      const history = await settledHistory(stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv)));
      expect(timedOutWorkflowTasks(history)).toBeGreaterThanOrEqual(1);
      const events = history.events ?? [];
      const timedOut = events.findIndex((e) => e.workflowTaskTimedOutEventAttributes);
      expect(activityRuns({ events: events.slice(0, timedOut) }).recordState).toBe(2);
      expect(activityRuns({ events: events.slice(timedOut) }).recordState).toBeGreaterThanOrEqual(1);
      const rows = await rowsOf(t);
      const items = [...first.messages, ...second.messages, ...third.messages];
      expect(rows.map((r) => r.idempotency_key)).toEqual(items.map((i) => i.idempotencyKey));
      expect(rows.map((r) => r.content)).toEqual(items.map((i) => i.message.content ?? null));
      expect(rows.map((r) => r.position)).toEqual(items.map((_, i) => i));
      expect(rows.every((r) => r.active && !r.compacted)).toBe(true);
      expect(status.activeMessages).toBe(items.length);

      // Re-sending the batch (a client retry) changes nothing.
      await stack.client.submit(t, conv, second, START);
      expect((await stack.client.sync(t, conv)).activeMessages).toBe(items.length);
      expect((await rowsOf(t)).length).toBe(items.length);
    } finally {
      await proc.kill().catch(() => undefined);
      await closeCase(stack, db);
    }
  });
});
