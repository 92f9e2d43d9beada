// Orchestration overhead of a compaction (`npm run bench:orchestration`): the same agent-style transcript compacted
//   (a) in process, engine only: `new ContextCompressor(...).compress(messages, { force: true })`, and
//   (b) through the real stack: conversation workflow → compaction child workflow → four phase activities that read
//       and write PostgreSQL, timed end to end around `client.compact(...)` (the manual-compress update),
// both with an instant summarizer, so the difference is what Temporal + PostgreSQL add around the engine's work.
// (b) is also split into the activities' own run time (from the child's history: started → completed) and the rest
// (update round trip, workflow tasks, child start, task dispatch).
//
// Starts its own Temporal dev server(s) and a temporary database (DATABASE_URL, else the local cluster of
// infra/postgres/ensure.sh) and removes them at exit. A fresh conversation per run; warm-up runs are discarded.
// Goal: orchestration overhead (p50 of b − p50 of a) under 300 ms.
//
// Two server configurations are measured (BENCH_SERVER=defaults|tuned picks one). With the dev server's defaults
// every task dispatch (workflow task or activity task) waits ~50 ms once a short burst is used up: the history
// service polls its transfer queue at most `history.transferProcessorMaxPollRPS` = 20 times a second per shard, and
// the dev server has one shard. A compaction is ~12 sequential dispatches, so that limit alone costs ~550 ms. The
// tuned run raises the limit (dynamic config); production clusters spread workflows over many shards.
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import proto from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { type ChatMessage, ContextCompressor, type Summarizer } from '../engine/index.js';
import { ensureTenant } from '../infra/db/tenants.js';
import { resolveDatabaseUrl } from '../infra/postgres/locate.js';
import { type DevServer, startDevServer } from '../infra/temporal/devServer.js';
import { createTestDatabase, type TestDatabase } from '../test/support/harness/db.js';
import { createStackAt, type StackAt } from '../test/support/harness/stackAt.js';
import type { ConversationStart } from '../workers/gateway/conversations.js';
import { compactionWorkflowId } from '../workflows/ids.js';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
Runtime.install({ logger: new DefaultLogger('ERROR') });

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const GOAL_MS = 300;
/** Transcript size → window. The transcript fills ~25 % of the window: below every automatic trigger, so the runs
 * measure the manual compaction alone. */
const CASES = [
  { size: 200, contextLength: 100_000 },
  { size: 2_000, contextLength: 1_000_000 },
] as const;
const CHUNK = 100;
const MODEL = 'bench-model';
const { EventType } = proto.temporal.api.enums.v1;

const instant: Summarizer = async () => '## Goal\nbenchmark summary\n## Progress\n### Done\n- everything so far';
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'config', 'value', 'result', 'error', 'module', 'index'];

/** ~`chars` ASCII characters in lines of about 80 characters, different for every seed. */
function filler(seed: number, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const word = `${WORDS[(seed + i * 7) % WORDS.length]}${(seed * 31 + i) % 997}`;
    parts.push(i % 12 === 11 ? `${word}\n` : word);
    length += word.length + 1;
  }
  return parts.join(' ');
}

/** system, then rounds of: user, assistant with 1–2 tool calls, their results (the bulk), assistant answer. */
function transcript(size: number): ChatMessage[] {
  const rows: ChatMessage[] = [{ role: 'system', content: `You are a coding agent. ${filler(0, 400)}` }];
  let id = 0;
  while (rows.length < size) {
    const n = rows.length;
    rows.push({ role: 'user', content: `Please continue with step ${n}. ${filler(n, 200)}` });
    const calls = Array.from({ length: 1 + (n % 2) }, () => {
      const callId = `call_${id++}`;
      return {
        id: callId,
        type: 'function' as const,
        function: { name: 'read_file', arguments: `{"path":"src/f${id}.ts"}` },
      };
    });
    rows.push({ role: 'assistant', content: null, tool_calls: calls });
    for (const c of calls)
      rows.push({ role: 'tool', tool_call_id: c.id, name: 'read_file', content: filler(n + 1, 1_200) });
    rows.push({ role: 'assistant', content: `Done with step ${n}. ${filler(n + 2, 200)}` });
  }
  // Never end on an assistant message with unanswered tool calls.
  const out = rows.slice(0, size);
  while (out.length > 0 && out[out.length - 1]!.tool_calls) out.pop();
  return out;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

interface Sample {
  ms: number;
  activityMs: number;
  /** Run time of each phase activity (b only). */
  phases: Record<string, number>;
  dropped: number;
  tokensBefore: number;
  tokensAfter: number;
}

async function engineRun(json: string, contextLength: number): Promise<Sample> {
  const messages = JSON.parse(json) as ChatMessage[];
  const engine = new ContextCompressor({ model: MODEL, contextLength, summarize: instant });
  collectGarbage();
  const start = performance.now();
  const out = await engine.compress(messages, { force: true });
  const ms = performance.now() - start;
  const stats = engine.lastStats;
  if (stats?.noop !== false || out.length >= messages.length) throw new Error('engine run did not compact');
  return {
    ms,
    activityMs: 0,
    phases: {},
    dropped: stats.droppedCount,
    tokensBefore: stats.tokensBefore,
    tokensAfter: stats.tokensAfter,
  };
}

const toMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : 0;

/** Run time (started → completed) of each phase activity in the compaction child's history. */
async function activityTimes(stack: StackAt, workflowId: string): Promise<Record<string, number>> {
  const history = await stack.temporal.client.workflow.getHandle(workflowId).fetchHistory();
  const names = new Map<string, string>();
  const started = new Map<string, number>();
  const phases: Record<string, number> = {};
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      names.set(id, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?');
    } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      started.set(String(e.activityTaskStartedEventAttributes?.scheduledEventId), toMs(e.eventTime));
    } else if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const scheduled = String(e.activityTaskCompletedEventAttributes?.scheduledEventId);
      const from = started.get(scheduled);
      const name = names.get(scheduled) ?? '?';
      if (from !== undefined) phases[name] = (phases[name] ?? 0) + toMs(e.eventTime) - from;
    }
  }
  return phases;
}

async function workflowRun(
  stack: StackAt,
  tenantId: string,
  messages: ChatMessage[],
  contextLength: number,
): Promise<Sample> {
  const conv = `bench-${messages.length}-${randomUUID()}`;
  const start: ConversationStart = { model: MODEL, contextLength };
  for (let i = 0; i < messages.length; i += CHUNK) {
    const items = messages.slice(i, i + CHUNK).map((message, j) => ({ message, idempotencyKey: `${conv}:${i + j}` }));
    await stack.client.submit(tenantId, conv, { messages: items }, start);
  }
  const before = await stack.client.sync(tenantId, conv);
  if (before.activeMessages !== messages.length || before.compressionCount !== 0) {
    throw new Error(`unexpected state before the compaction: ${JSON.stringify(before)}`);
  }
  collectGarbage();
  const t0 = performance.now();
  const result = await stack.client.compact(tenantId, conv);
  const ms = performance.now() - t0;
  if (result.status !== 'committed' || !result.stats) throw new Error(`compaction ${result.status}: ${result.error}`);
  const phases = await activityTimes(stack, compactionWorkflowId(tenantId, before.sessionId, 1));
  return {
    ms,
    activityMs: Object.values(phases).reduce((sum, v) => sum + v, 0),
    phases,
    dropped: result.stats.droppedCount,
    tokensBefore: result.stats.tokensBefore,
    tokensAfter: result.stats.tokensAfter,
  };
}

const fmt = (ms: number) => ms.toFixed(1);
function row(cells: (string | number)[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('  ');
}

interface ServerConfig {
  name: string;
  dynamicConfig: Record<string, unknown>;
}

/** The dev server as the tests run it, and with the history transfer-queue poll rate raised (see the header). */
const SERVER_CONFIGS: ServerConfig[] = [
  { name: 'dev server defaults', dynamicConfig: {} },
  { name: 'history.transferProcessorMaxPollRPS=1000', dynamicConfig: { 'history.transferProcessorMaxPollRPS': 1000 } },
];

const WIDTHS = [26, 8, 8, 8, 8, 8, 16];

function line(name: string, samples: Sample[], pick: (s: Sample) => number, withWindow: boolean): void {
  const values = samples.map(pick);
  const s = samples[0]!;
  const cells = [
    name,
    fmt(percentile(values, 50)),
    fmt(percentile(values, 95)),
    fmt(Math.min(...values)),
    fmt(Math.max(...values)),
    withWindow ? s.dropped : '',
    withWindow ? `${s.tokensBefore}→${s.tokensAfter}` : '',
  ];
  console.log(row(cells, WIDTHS));
}

/** One server configuration: its own dev server and database, every case; returns the summary lines. */
async function measureWith(config: ServerConfig, databaseUrl: string, resources: Set<() => Promise<void>>) {
  const server: DevServer = await startDevServer({
    searchAttributes: SEARCH_ATTRIBUTES,
    uiPort: false,
    dynamicConfig: config.dynamicConfig,
  });
  const stopServer = () => server.stop();
  resources.add(stopServer);
  const testDb: TestDatabase = await createTestDatabase(databaseUrl);
  const dropDb = () => testDb.drop();
  resources.add(dropDb);
  const stack: StackAt = await createStackAt({
    address: server.address,
    namespace: server.namespace,
    db: testDb.db,
    summarizer: instant,
  });
  const closeStack = () => stack.close();
  resources.add(closeStack);
  const results: Array<{ label: string; overhead: number; overhead95: number; ratio: number }> = [];
  try {
    const tenantId = `bench-${randomUUID().slice(0, 8)}`;
    await ensureTenant(testDb.db, { id: tenantId, name: 'benchmark' });
    console.log(`\n== ${config.name}`);
    console.log(row(['case (ms)', 'p50', 'p95', 'min', 'max', 'window', 'tokens'], WIDTHS));
    for (const { size, contextLength } of CASES) {
      const json = JSON.stringify(transcript(size));
      const engine: Sample[] = [];
      const flow: Sample[] = [];
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const a = await engineRun(json, contextLength);
        const b = await workflowRun(stack, tenantId, JSON.parse(json) as ChatMessage[], contextLength);
        if (i >= WARMUP) {
          engine.push(a);
          flow.push(b);
        }
      }
      const label = `${size.toLocaleString('en-US')} msgs, ctx ${contextLength.toLocaleString('en-US')}`;
      console.log(label);
      line('  (a) engine', engine, (s) => s.ms, true);
      line('  (b) workflow end to end', flow, (s) => s.ms, true);
      line('      of which activities', flow, (s) => s.activityMs, false);
      for (const phase of ['align', 'prune', 'summarize', 'reassemble']) {
        line(`        ${phase}`, flow, (s) => s.phases[phase] ?? 0, false);
      }
      line('      of which the rest', flow, (s) => s.ms - s.activityMs, false);
      const a50 = percentile(
        engine.map((s) => s.ms),
        50,
      );
      const b50 = percentile(
        flow.map((s) => s.ms),
        50,
      );
      const a95 = percentile(
        engine.map((s) => s.ms),
        95,
      );
      const b95 = percentile(
        flow.map((s) => s.ms),
        95,
      );
      const result = { label, overhead: b50 - a50, overhead95: b95 - a95, ratio: b50 / a50 };
      console.log(
        `  overhead (b − a): p50 ${fmt(result.overhead)}, p95 ${fmt(result.overhead95)}; b/a at p50 ${result.ratio.toFixed(0)}x`,
      );
      results.push(result);
    }
  } finally {
    for (const release of [closeStack, dropDb, stopServer]) {
      resources.delete(release);
      await release().catch((err: unknown) => console.error(err));
    }
  }
  return results;
}

async function main(): Promise<void> {
  // Whatever is still held when the process is interrupted: worker, database, dev server.
  const resources = new Set<() => Promise<void>>();
  const onSignal = () =>
    void (async () => {
      for (const release of [...resources].reverse()) await release().catch(() => undefined);
      process.exit(130);
    })();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const only = process.env.BENCH_SERVER; // 'defaults' | 'tuned' | unset: both
  const configs = SERVER_CONFIGS.filter((_, i) => !only || (only === 'defaults' ? i === 0 : i === 1));
  const databaseUrl = await resolveDatabaseUrl();
  console.log(`compaction of one agent transcript, instant summarizer; ${RUNS} runs after ${WARMUP} warm-ups each`);
  console.log('(a) engine in process; (b) conversation → compaction child workflow → 4 activities + PostgreSQL');
  console.log('window = messages summarised; p95 is nearest-rank (with 15 runs: the largest)');
  const summary: string[] = [];
  for (const config of configs) {
    for (const r of await measureWith(config, databaseUrl, resources)) {
      const ok = r.overhead < GOAL_MS;
      summary.push(
        `${config.name}, ${r.label}: overhead p50 ${fmt(r.overhead)} ms (p95 ${fmt(r.overhead95)}) — ` +
          `${ok ? 'under' : 'OVER'} the ${GOAL_MS} ms goal`,
      );
    }
  }
  console.log(`\nGoal: orchestration overhead under ${GOAL_MS} ms p50\n${summary.join('\n')}`);
}

await main();
