// Recovery after a worker crash (`npm run bench:recovery`, issue #9 §5): a worker process is SIGKILLed at a kill point
// of a conversation's work and a NEW worker process is started right after (what an operator's restart or a
// supervisor does). Measured: the seconds from the kill until the conversation answers again — the manual
// compaction's update resolves (compaction phases), or a `sync` of the next batch returns (recordState).
// Goal: p95 over the kill points ≤ 10 s, with the production timeouts (no `timeouts` knobs are passed).
//
// Kill points (hooks of test/support/harness/workerProcess.ts): align (which creates the record), prune, reassemble
// (PAUSE_AFTER: the activity's writes are done, its completion is never reported), summarize (PAUSE_IN: while the
// summarizer answers) and recordState (PAUSE_AFTER its second call: the workflow publishes the second batch; every
// batch is notified, a local activity). Both processes load one prebuilt workflow bundle, so the restart does not
// re-bundle; its start-up (spawn → polling) is printed on its own.
// From the workflows' histories the time is split into: the lost attempt (kill → its retry starts on the new worker:
// heartbeat timeout + retry backoff, or the start-up when that is longer), sticky-queue waits (workflow tasks sent
// to the dead worker's sticky queue until they time out to the normal queue) and the rest (the remaining phases,
// task dispatch, replay of the histories on the new worker).
//
// Starts its own Temporal dev server and a temporary database (DATABASE_URL, else the local cluster of
// infra/postgres/ensure.sh) and removes them at exit. BENCH_REPS (default 3) runs per kill point.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import proto from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { CONVERSATION_TASK_TIMEOUT, TemporalUnavailableError } from '../clients/conversationClient.js';
import { ensureTenant } from '../infra/db/tenants.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { startDevServer } from '../infra/temporal/devServer.js';
import { agentTranscript, batch } from '../test/integration/workflows/transcript.js';
import { createTestDatabase, type TestDatabase } from '../test/support/harness/db.js';
import { fixedSummarizer } from '../test/support/harness/fixedSummarizer.js';
import { startWorkerProcess, type WorkerProcess } from '../test/support/harness/spawnWorker.js';
import { createStackAt, productWorkflowBundle, type StackAt } from '../test/support/harness/stackAt.js';
import { type ConversationStart, Conversations } from '../workers/gateway/conversations.js';
import {
  DEFAULT_COMPACTION_TIMEOUTS,
  HEARTBEAT_TIMEOUT_SECONDS,
  phaseActivityOptions,
  storeActivityOptions,
  summaryActivityOptions,
} from '../workflows/activityOptions.js';
import { compactionWorkflowId, conversationWorkflowId } from '../workflows/ids.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';

Runtime.install({ logger: new DefaultLogger('ERROR') });

const REPS = Number(process.env.BENCH_REPS ?? 3);
const GOAL_S = 10;
/** Production timeouts: no `timeouts` here. */
const START: ConversationStart = { model: 'bench-model', contextLength: 200_000 };
const { EventType, TimeoutType } = proto.temporal.api.enums.v1;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

interface KillPoint {
  name: string;
  /** The activity the worker dies in, and the workflow that runs it. */
  activity: string;
  workflow: 'compaction' | 'conversation';
  hook: Record<string, string>;
  /** A local activity: retried in the next workflow task, not as an activity task. */
  local?: boolean;
}

const KILL_POINTS: KillPoint[] = [
  { name: 'align', activity: 'align', workflow: 'compaction', hook: { PAUSE_AFTER: 'align' } },
  { name: 'prune', activity: 'prune', workflow: 'compaction', hook: { PAUSE_AFTER: 'prune' } },
  { name: 'summarize (answering)', activity: 'summarize', workflow: 'compaction', hook: { PAUSE_IN: 'summarize' } },
  { name: 'reassemble', activity: 'reassemble', workflow: 'compaction', hook: { PAUSE_AFTER: 'reassemble' } },
  {
    name: 'recordState',
    activity: 'recordState',
    workflow: 'conversation',
    hook: { PAUSE_AFTER: 'recordState', PAUSE_SKIP: '1' },
    local: true,
  },
];

interface Sample {
  /** Kill → the conversation answers again. */
  totalMs: number;
  /** Spawn of the new worker → it polls. */
  startupMs: number;
  /** Kill → the killed activity's retry started (on the new worker). */
  lostAttemptMs: number;
  /** Workflow tasks that waited on the dead worker's sticky queue after the retry: how many, how long in all. */
  stickyWaits: number;
  stickyMs: number;
}

interface Bench {
  address: string;
  namespace: string;
  testDb: TestDatabase;
  bundlePath: string;
  processes: Set<WorkerProcess>;
}

const toMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;

async function historyOf(stack: StackAt, workflowId: string): Promise<HistoryEvent[]> {
  return (await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

/** When the last retry (attempt ≥ 2) of `activity` started, from a workflow's history. */
function retryStartedAt(events: HistoryEvent[], activity: string): number | null {
  const names = new Map<string, string>();
  let at: number | null = null;
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      names.set(String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
    } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const started = e.activityTaskStartedEventAttributes;
      const name = names.get(String(started?.scheduledEventId));
      if (name === activity && (started?.attempt ?? 1) >= 2) at = toMs(e.eventTime);
    }
  }
  return at;
}

/**
 * A local activity (recordState, patch `local-publish`) leaves no activity events: its lost attempt ends when a
 * workflow task of the conversation starts again after the kill, on the new worker, and runs it again.
 */
function workflowTaskStartedAfter(events: HistoryEvent[], since: number): number | null {
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED && toMs(e.eventTime) > since)
      return toMs(e.eventTime);
  }
  return null;
}

/** Workflow tasks scheduled from `since` on that timed out on a sticky queue (schedule-to-start): their waits (ms). */
function stickyWaits(events: HistoryEvent[], since: number): number[] {
  const scheduled = new Map<string, number>();
  const waits: number[] = [];
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
      scheduled.set(String(e.eventId), toMs(e.eventTime));
    const timedOut = e.workflowTaskTimedOutEventAttributes;
    if (e.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT || !timedOut) continue;
    if (timedOut.timeoutType !== TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START) continue;
    const from = scheduled.get(String(timedOut.scheduledEventId));
    if (from !== undefined && from >= since) waits.push(toMs(e.eventTime) - from);
  }
  return waits;
}

function spawnWorker(bench: Bench, taskQueue: string, hook: Record<string, string>): WorkerProcess {
  const worker = startWorkerProcess({
    databaseUrl: bench.testDb.url,
    temporalAddress: bench.address,
    temporalNamespace: bench.namespace,
    taskQueue,
    bundlePath: bench.bundlePath,
    env: hook,
  });
  bench.processes.add(worker);
  return worker;
}

/** `sync` until it returns: it answers unavailable after its own bound while the workflow has not caught up. */
async function syncUntilAnswered(stack: StackAt, tenantId: string, conversationId: string): Promise<void> {
  for (;;) {
    try {
      await stack.client.sync(tenantId, conversationId);
      return;
    } catch (err) {
      if (!(err instanceof TemporalUnavailableError)) throw err;
    }
  }
}

/** One kill and restart at `point` on a task queue of its own; the sample of that run. */
async function runOnce(bench: Bench, point: KillPoint): Promise<Sample> {
  // The stack's in-process worker is stopped at once: the client side only (the Conversations facade).
  const stack = await createStackAt({
    address: bench.address,
    namespace: bench.namespace,
    db: bench.testDb.db,
    summarizer: fixedSummarizer,
  });
  await stack.stopWorker();
  const crashed = spawnWorker(bench, stack.taskQueue, point.hook);
  let restarted: WorkerProcess | undefined;
  try {
    const tenantId = `bench-${randomUUID().slice(0, 8)}`;
    await ensureTenant(bench.testDb.db, { id: tenantId, name: tenantId });
    const conv = randomUUID();
    await crashed.waitFor('READY');
    await stack.client.submit(tenantId, conv, batch(agentTranscript(12, { tag: 'recovery' })), START);
    const before = await stack.client.sync(tenantId, conv);

    let answered: () => Promise<void>;
    if (point.workflow === 'compaction') {
      const pending = stack.client.compact(tenantId, conv);
      pending.catch(() => undefined);
      answered = async () => {
        const result = await pending;
        if (result.status !== 'committed')
          throw new Error(`${point.name}: compaction ${result.status}: ${result.error}`);
      };
    } else {
      // Every batch notified: a quiet batch would never reach the workflow (no publication to die in), and the
      // gateway would mark it applied itself, so `sync` would answer without the restarted worker.
      const loud = new Conversations(bench.testDb.db, stack.temporal, { notifyEveryBatch: true });
      await loud.submit(tenantId, conv, batch(agentTranscript(4, { tag: 'later' }).slice(1)), START);
      answered = async () => {
        await loud.submit(tenantId, conv, batch([{ role: 'user', content: 'one more question' }]), START);
        await syncUntilAnswered(stack, tenantId, conv);
      };
    }
    await crashed.waitFor(`PAUSED ${point.activity}`);

    const killedAt = Date.now();
    const killed = crashed.kill();
    restarted = spawnWorker(bench, stack.taskQueue, {});
    const ready = restarted.waitFor('READY').then(() => Date.now());
    await killed;
    await answered();
    const answeredAt = Date.now();
    const readyAt = await ready;

    const workflowIds = [conversationWorkflowId(tenantId, conv)];
    if (point.workflow === 'compaction') workflowIds.push(compactionWorkflowId(tenantId, before.sessionId, 1));
    const histories = await Promise.all(workflowIds.map((id) => historyOf(stack, id)));
    const own = point.workflow === 'compaction' ? histories[1]! : histories[0]!;
    const retriedAt = point.local ? workflowTaskStartedAfter(own, killedAt) : retryStartedAt(own, point.activity);
    if (retriedAt === null) throw new Error(`${point.name}: no retry of ${point.activity} in the history`);
    // Sticky waits that began once the lost attempt was retried are on the critical path; earlier ones overlap it.
    const waits = histories.flatMap((events) => stickyWaits(events, retriedAt));
    return {
      totalMs: answeredAt - killedAt,
      startupMs: readyAt - killedAt,
      lostAttemptMs: retriedAt - killedAt,
      stickyWaits: waits.length,
      stickyMs: waits.reduce((sum, w) => sum + w, 0),
    };
  } finally {
    await crashed.kill();
    await restarted?.kill();
    await stack.close();
  }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const WIDTHS = [22, 5, 7, 7, 10, 10, 12, 7, 6];
function row(cells: (string | number)[]): string {
  return cells.map((c, i) => (i === 0 ? String(c).padEnd(WIDTHS[i]!) : String(c).padStart(WIDTHS[i]!))).join('  ');
}

function report(results: Map<string, Sample[]>): void {
  console.log('');
  console.log(`Recovery after SIGKILL of the worker + immediate restart (new process), ${REPS} runs per kill point`);
  console.log('Seconds from the kill until the conversation answers again; the split columns are p50s.');
  console.log(`Load average (1 min) at the end: ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`);
  console.log('');
  console.log(
    row(['kill point', 'runs', 'p50 s', 'p95 s', 'start-up s', 'retried s', 'sticky s (n)', 'rest s', 'goal']),
  );
  const all: Sample[] = [];
  for (const [name, samples] of results) {
    all.push(...samples);
    const p95 = percentile(
      samples.map((s) => s.totalMs),
      95,
    );
    const p50 = (pick: (s: Sample) => number) => percentile(samples.map(pick), 50);
    console.log(
      row([
        name,
        samples.length,
        seconds(p50((s) => s.totalMs)),
        seconds(p95),
        seconds(p50((s) => s.startupMs)),
        seconds(p50((s) => s.lostAttemptMs)),
        `${seconds(p50((s) => s.stickyMs))} (${p50((s) => s.stickyWaits)})`,
        seconds(p50((s) => s.totalMs - s.lostAttemptMs - s.stickyMs)),
        p95 <= GOAL_S * 1000 ? `≤ ${GOAL_S}` : `> ${GOAL_S}`,
      ]),
    );
  }
  const totals = all.map((s) => s.totalMs);
  const p95 = percentile(totals, 95);
  const met = p95 <= GOAL_S * 1000;
  console.log('');
  console.log(
    `All kill points: p50 ${seconds(percentile(totals, 50))} s, p95 ${seconds(p95)} s — goal: p95 ≤ ${GOAL_S} s → ` +
      (met ? 'met' : 'MISSED'),
  );
  const phase = phaseActivityOptions(DEFAULT_COMPACTION_TIMEOUTS).retry?.initialInterval;
  const summary = summaryActivityOptions(DEFAULT_COMPACTION_TIMEOUTS).retry?.initialInterval;
  const store = storeActivityOptions.retry?.initialInterval;
  const stickyEach = all.filter((s) => s.stickyWaits > 0).map((s) => s.stickyMs / s.stickyWaits);
  console.log('');
  console.log('Where the time goes (columns):');
  console.log(
    `  start-up   spawn of the new worker → polling (prebuilt bundle); runs in parallel with the heartbeat timeout`,
  );
  console.log(
    `  retried    kill → the lost attempt restarts on the new worker: heartbeat timeout ${HEARTBEAT_TIMEOUT_SECONDS} s ` +
      `(workflows/activityOptions.ts) + first retry interval (phases ${phase}, summarize ${summary}, store ${store})`,
  );
  console.log(
    "             (retried ≈ max(start-up, heartbeat timeout + first retry interval) + the server's timer and dispatch latency)",
  );
  console.log(
    `             recordState (a local activity): kill → the conversation's workflow task times out ` +
      `(${CONVERSATION_TASK_TIMEOUT}, clients/conversationClient.ts) and starts on the new worker`,
  );
  console.log(
    `  sticky     after the retry, workflow tasks sent to the dead worker's sticky queue (child, then parent) until they move to the ` +
      `normal queue: stickyQueueScheduleToStartTimeout (workers/createWorker.ts), ` +
      `${stickyEach.length > 0 ? seconds(percentile(stickyEach, 50)) : '—'} s each here`,
  );
  console.log('  rest       the remaining phases, task dispatch, replay of the histories on the new worker');
  // What-if estimates from the measured split: a shorter sticky timeout shortens each critical sticky wait; a
  // shorter heartbeat timeout brings the retry forward, but never before the new worker polls.
  const each = stickyEach.length > 0 ? percentile(stickyEach, 50) : 0;
  const withSticky = (s: Sample, ms: number) => s.totalMs - s.stickyWaits * Math.max(0, each - ms);
  const withHeartbeat = (s: Sample, total: number, sec: number) =>
    total - (s.lostAttemptMs - Math.max(s.startupMs, s.lostAttemptMs - (HEARTBEAT_TIMEOUT_SECONDS - sec) * 1000));
  const estimate = (f: (s: Sample) => number) => seconds(percentile(all.map(f), 95));
  console.log('');
  console.log(`${met ? 'Goal met' : 'Goal missed'}; estimated p95 from the split above:`);
  console.log(`  stickyQueueScheduleToStartTimeout 0.5 s:      ${estimate((s) => withSticky(s, 500))} s`);
  console.log(`  heartbeat timeout 2 s:                         ${estimate((s) => withHeartbeat(s, s.totalMs, 2))} s`);
  console.log(
    `  both:                                          ${estimate((s) => withHeartbeat(s, withSticky(s, 500), 2))} s`,
  );
  const startup = seconds(
    percentile(
      all.map((s) => s.startupMs),
      50,
    ),
  );
  console.log(
    `  the worker's start-up (p50 ${startup} s, mostly loading the TypeScript import graph through tsx) bounds how early a retry runs`,
  );
}

async function main(): Promise<void> {
  const server = await startDevServer({ searchAttributes: SEARCH_ATTRIBUTES, uiPort: false });
  const testDb = await createTestDatabase(await resolveDatabaseUrl());
  const bundleDir = await mkdtemp(join(tmpdir(), 'dc-recovery-'));
  const bench: Bench = {
    address: server.address,
    namespace: server.namespace,
    testDb,
    bundlePath: join(bundleDir, 'workflow-bundle.js'),
    processes: new Set(),
  };
  const killAll = () => {
    for (const p of bench.processes)
      if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  };
  process.once('exit', killAll);
  try {
    await writeFile(bench.bundlePath, (await productWorkflowBundle()).code);
    const results = new Map<string, Sample[]>();
    for (const point of KILL_POINTS) {
      const samples: Sample[] = [];
      for (let i = 0; i < REPS; i++) {
        const sample = await runOnce(bench, point);
        samples.push(sample);
        console.log(
          `${point.name} #${i + 1}: ${seconds(sample.totalMs)} s (start-up ${seconds(sample.startupMs)} s, ` +
            `retried after ${seconds(sample.lostAttemptMs)} s, ${sample.stickyWaits} sticky waits ${seconds(sample.stickyMs)} s)`,
        );
      }
      results.set(point.name, samples);
    }
    report(results);
  } finally {
    killAll();
    await testDb.drop();
    await server.stop();
    await rm(bundleDir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
