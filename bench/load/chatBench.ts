// The chat mode (--chat): conversations whose provider is a fake OpenAI server with a 0 ms model (chatFakes.ts), each
// seeded with an agent history through plain posts, then a solo phase (half of `chatSeconds`, at least 5 s: one
// conversation, one turn at a time — the product's own time per turn on a machine it does not saturate) and two phases
// of `chatSeconds` each with one turn in flight per conversation (POST …/messages with respond: true):
//   A. no compactions: every reply reports a prompt well below the threshold. Printed: the turn latency, the fakes'
//      own time (the product's last request posted straight to the fake) and the product's overhead per turn (turn
//      latency − the fake's own time, at the same percentile). Goal: p50 ≤ 20 ms.
//   B. with compactions: every `compactEvery`-th reply of a conversation reports a prompt between the in-loop
//      threshold and the hygiene threshold (85 %), so an automatic compaction runs, with summaries from a fake that
//      takes `summaryDelayMs` (5 s); the other replies report what a compaction leaves. Goal: turn latency p99 within
//      +50 ms of phase A (background compaction). A turn whose reply carries a compaction waited for it.
// Each phase has its own conversations, seeded alike, so both start from transcripts of the same size: phase A's
// turns grow its transcripts well past what the fake's low readings claim, and on those the gateway would rightly
// send every turn to the workflow once a compaction runs (the estimate bounds what hygiene may decide then).
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { LoadOptions } from '../load.js';
import { CHAT_MODEL, type ChatFakes, FAKE_KEY, FAKE_KEY_ENV, startChatFakes, timeFakesDirectly } from './chatFakes.js';
import { type CpuReport, sampleCpu } from './cpu.js';
import { isSuccess, JsonHttp, outcomeOf } from './http.js';
import type { Logs } from './ingestBench.js';
import { ConversationScript, prng, text } from './messages.js';
import { cpuRows, int, latencies, loadAverage, ms, printTable, type Row } from './report.js';
import { type BenchConversation, createConversations, createTenants } from './setup.js';
import type { Stack, StartOptions } from './stack.js';
import { sleep, summarize, Tally } from './stats.js';

const CONTEXT_LENGTH = 200_000;
const SEED_BATCHES = 40;

interface Phase {
  name: string;
  latencies: number[];
  /** Turns whose reply carried a compaction (they waited for it). */
  compacted: number[];
  outcomes: Tally;
  seconds: number;
  cpu: CpuReport;
  /** From the gateway's /metrics over the phase: where its turns ran, and the waits for the workflow's rules. */
  turns: TurnCounts;
}

interface TurnCounts {
  paths: Record<string, number>;
  waits: number;
  waitSeconds: number;
  /** dctx_chat_turn_seconds: per path, the cumulative count at each bucket bound (seconds; Infinity last). */
  seconds: Record<string, Map<number, number>>;
}

/** The gateway's chat-turn metrics (dctx_chat_turns_total, dctx_chat_turn_rules_wait_seconds, …) as they stand. */
async function turnCounts(url: string): Promise<TurnCounts> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const counts: TurnCounts = { paths: {}, waits: 0, waitSeconds: 0, seconds: {} };
  for (const line of text.split('\n')) {
    const path = /^dctx_chat_turns_total\{path="([a-z_]+)"\} (\S+)$/.exec(line);
    if (path) counts.paths[path[1]!] = Number(path[2]);
    const wait = /^dctx_chat_turn_rules_wait_seconds_(count|sum)\{[^}]*\} (\S+)$/.exec(line);
    if (wait?.[1] === 'count') counts.waits += Number(wait[2]);
    if (wait?.[1] === 'sum') counts.waitSeconds += Number(wait[2]);
    const bucket = /^dctx_chat_turn_seconds_bucket\{le="([^"]+)",path="([a-z_]+)"\} (\S+)$/.exec(line);
    if (bucket) {
      const le = bucket[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(bucket[1]);
      const path = bucket[2]!;
      counts.seconds[path] ??= new Map();
      counts.seconds[path].set(le, Number(bucket[3]));
    }
  }
  return counts;
}

function since(before: TurnCounts, after: TurnCounts): TurnCounts {
  const paths: Record<string, number> = {};
  for (const [key, value] of Object.entries(after.paths)) paths[key] = value - (before.paths[key] ?? 0);
  const seconds: Record<string, Map<number, number>> = {};
  for (const [path, buckets] of Object.entries(after.seconds)) {
    seconds[path] = new Map([...buckets].map(([le, n]) => [le, n - (before.seconds[path]?.get(le) ?? 0)]));
  }
  return { paths, waits: after.waits - before.waits, waitSeconds: after.waitSeconds - before.waitSeconds, seconds };
}

/** The bucket bound under which a share `q` of a path's turns fell ("≤ 100 ms"), from the histogram. */
function bucketQuantile(buckets: Map<number, number>, q: number): string {
  const total = buckets.get(Number.POSITIVE_INFINITY) ?? 0;
  for (const [le, n] of [...buckets].sort((a, b) => a[0] - b[0])) {
    if (n >= q * total) return Number.isFinite(le) ? `≤ ${ms(le * 1000)}` : '> 30 s';
  }
  return '—';
}

function describeTurns(t: TurnCounts): string {
  const p = (key: string) => int(t.paths[key] ?? 0);
  const mean = t.waits > 0 ? `, mean ${ms((t.waitSeconds / t.waits) * 1000)}` : '';
  return `quiet ${p('gateway_quiet')}, notified ${p('gateway_notified')}, workflow ${p('workflow')}; ${int(t.waits)} waited for rules${mean}`;
}

/** Per path with turns: its p50 / p99 turn time, as histogram bucket bounds. */
function describeTurnTimes(t: TurnCounts): string {
  const parts: string[] = [];
  for (const path of ['gateway_quiet', 'gateway_notified', 'workflow']) {
    const buckets = t.seconds[path];
    if (!buckets || (buckets.get(Number.POSITIVE_INFINITY) ?? 0) === 0) continue;
    parts.push(`${path.replace('gateway_', '')} ${bucketQuantile(buckets, 0.5)} / ${bucketQuantile(buckets, 0.99)}`);
  }
  return parts.join('; ') || '—';
}

/** Seeds each conversation with an agent history (plain posts, the last with `wait: true`), until it is applied. */
async function seed(http: JsonHttp, conversations: BenchConversation[], runId: string): Promise<void> {
  await Promise.all(
    conversations.map(async (conversation) => {
      const script = new ConversationScript(conversation.id, conversation.index + 7, {
        runId: `${runId}-seed`,
        thresholdTokens: 150_000,
        compact: false,
      });
      for (let i = 0; i < SEED_BATCHES; i++) {
        const batch = script.next();
        const answer = await http.request('POST', `/v1/conversations/${conversation.id}/messages`, {
          token: conversation.tenant.key,
          // The last batch waits until the workflow has decided on everything (and started: a conversation's
          // workflow starts with its first decision or the first request that needs it).
          body: {
            messages: batch.messages,
            usage: { ...batch.usage, prompt_tokens: 5_000 + 400 * i },
            ...(i === SEED_BATCHES - 1 ? { wait: true } : {}),
          },
          timeoutMs: 60_000,
        });
        if (!isSuccess(answer)) throw new Error(`seeding ${conversation.id}: ${outcomeOf(answer)}`);
      }
      for (;;) {
        const status = await http.request('GET', `/v1/conversations/${conversation.id}/status`, {
          token: conversation.tenant.key,
        });
        if (status.status === 200 && status.body.published && status.body.appliedSeq >= status.body.batchSeq) return;
        await sleep(100);
      }
    }),
  );
}

async function runPhase(
  name: string,
  options: { http: JsonHttp; fakes: ChatFakes; conversations: BenchConversation[]; seconds: number; stack: Stack },
  reading: (conversation: BenchConversation, turn: number) => number,
  turns: number[],
): Promise<Phase> {
  const phase: Phase = {
    name,
    latencies: [],
    compacted: [],
    outcomes: new Tally(),
    seconds: 0,
    cpu: null as never,
    turns: null as never,
  };
  const countsBefore = await turnCounts(options.stack.url);
  const cpu = sampleCpu({ rootPid: options.stack.rootPid, db: options.stack.db, database: options.stack.databaseName });
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  await Promise.all(
    options.conversations.map(async (conversation) => {
      const random = prng(conversation.index * 7919 + 17);
      while (performance.now() < deadline) {
        const turn = ++turns[conversation.index]!;
        options.fakes.script(conversation.index, reading(conversation, turn));
        const key = `${conversation.id}:turn${turn}`;
        const content = `[bench ${key}] ${text(random, 600 + Math.floor(random() * 900))}`;
        const answer = await options.http.request('POST', `/v1/conversations/${conversation.id}/messages`, {
          token: conversation.tenant.key,
          body: { messages: [{ message: { role: 'user', content }, idempotencyKey: key }], respond: true },
          timeoutMs: 120_000,
        });
        options.fakes.trim(conversation.index);
        phase.outcomes.add(outcomeOf(answer));
        if (answer.status !== 200) continue;
        phase.latencies.push(answer.ms);
        if (answer.body?.compaction) phase.compacted.push(answer.ms);
      }
    }),
  );
  phase.seconds = (performance.now() - started) / 1000;
  phase.cpu = await cpu.stop();
  phase.turns = since(countsBefore, await turnCounts(options.stack.url));
  return phase;
}

export async function runChatBench(
  options: LoadOptions,
  start: (config: Omit<StartOptions, 'log'>) => Promise<Stack>,
  logs: Logs,
): Promise<void> {
  const loadStart = loadAverage();
  const runId = `lc${randomBytes(3).toString('hex')}`;
  const count = Math.round(options.chatConversations);
  // One fake per conversation: phase A's, phase B's, and the one conversation of the solo phase (the last).
  const fakes = await startChatFakes(2 * count + 1, options.summaryDelayMs);
  try {
    const stack = await start({
      configYaml: fakes.configYaml(['compression: { max_auto_per_hour: null }']),
      env: { [FAKE_KEY_ENV]: FAKE_KEY },
    });
    logs.progress(`bench:load --chat ${runId}: gateway ${stack.url}; load average ${loadStart}`);
    const http = new JsonHttp(stack.url, count + 4);
    const tenants = await createTenants(http, stack.adminKey, runId, Math.min(Math.round(options.tenants), count));
    const { conversations } = await createConversations(http, tenants, runId, 2 * count + 1, count, {
      body: (i) => ({ model: CHAT_MODEL, provider: `chat${i}`, contextLength: CONTEXT_LENGTH }),
    });
    const [forA, forB, solo] = [
      conversations.slice(0, count),
      conversations.slice(count, 2 * count),
      conversations.slice(2 * count),
    ];
    logs.progress(
      `seeding ${2 * count + 1} conversations (${count} per phase, 1 alone) with ${SEED_BATCHES * 2} messages each…`,
    );
    await seed(http, conversations, runId);
    const status = await http.request('GET', `/v1/conversations/${conversations[0]!.id}/status`, {
      token: conversations[0]!.tenant.key,
    });
    const threshold = Number(status.body.thresholdTokens);
    const hygiene = Math.floor(CONTEXT_LENGTH * 0.85);
    const high = Math.floor((threshold + hygiene) / 2);
    const low = (turn: number) => Math.min(Math.floor(threshold * 0.4), 20_000 + 100 * turn);
    const turns = conversations.map(() => 0);
    const context = { http, fakes, seconds: options.chatSeconds, stack };

    // The overhead of a turn on a machine that is not saturated: one conversation, one turn at a time, as phase A
    // otherwise. Its fake's own time is measured before any other fake has a request to replay.
    const soloSeconds = Math.max(5, Math.round(options.chatSeconds / 2));
    logs.progress(`solo phase: ${soloSeconds} s of turns of one conversation, no compactions…`);
    const alone = await runPhase(
      'solo',
      { ...context, seconds: soloSeconds, conversations: solo },
      (_c, turn) => low(turn),
      turns,
    );
    const aloneDirect = await timeFakesDirectly(fakes, 25);
    for (const conversation of solo) fakes.lastBodies[conversation.index] = null;

    logs.progress(`phase A: ${options.chatSeconds} s of turns, no compactions…`);
    const quiet = await runPhase('A', { ...context, conversations: forA }, (_c, turn) => low(turn), turns);
    const direct = await timeFakesDirectly(fakes, 25);

    logs.progress(`phase B: ${options.chatSeconds} s of turns, a compaction every ${options.compactEvery} turns…`);
    const since = stack.db ? (await stack.db.query<{ now: Date }>('SELECT now()')).rows[0]!.now : null;
    const summariesBefore = fakes.summaryCalls();
    const every = Math.round(options.compactEvery);
    const busy = await runPhase(
      'B',
      { ...context, conversations: forB },
      (_c, turn) => (turn % every === 0 ? high : low(turn)),
      turns,
    );
    const summaryCalls = fakes.summaryCalls() - summariesBefore;
    const compactions = new Tally();
    if (stack.db && since) {
      const { rows } = await stack.db.query<{ trigger: string; status: string; n: string }>(
        `SELECT trigger, status, count(*) AS n FROM compactions
          WHERE tenant_id = ANY($1::text[]) AND created_at >= $2 GROUP BY trigger, status`,
        [tenants.map((t) => t.id), since],
      );
      for (const row of rows) compactions.add(`${row.trigger} ${row.status}`, Number(row.n));
    }
    http.close();
    report(
      options,
      { alone, aloneDirect, quiet, busy, direct, compactions, summaryCalls, threshold, high, loadStart },
      logs.log,
    );
  } finally {
    await fakes.close();
  }
}

function report(
  options: LoadOptions,
  f: {
    /** One conversation, one turn at a time (the solo phase), and its fake's own time. */
    alone: Phase;
    aloneDirect: number[];
    quiet: Phase;
    busy: Phase;
    direct: number[];
    compactions: Tally;
    summaryCalls: number;
    threshold: number;
    high: number;
    loadStart: string;
  },
  log: (line: string) => void,
): void {
  const quiet = summarize(f.quiet.latencies);
  const busy = summarize(f.busy.latencies);
  const fake = summarize(f.direct);
  const waited = summarize(f.busy.compacted);
  const overheadP50 = quiet.p50 - fake.p50;
  const overheadP99 = quiet.p99 - fake.p99;
  const increase = busy.p99 - quiet.p99;
  const alone = summarize(f.alone.latencies);
  const aloneFake = summarize(f.aloneDirect);
  const aloneOverhead = alone.p50 - aloneFake.p50;
  const errors = (phase: Phase) => phase.outcomes.total() - phase.latencies.length;
  const rows: Row[] = [
    {
      measure: 'turns, no compactions: p50 / p95 / p99',
      figure: `${latencies(quiet)} (${int(quiet.n)} turns, ${(quiet.n / f.quiet.seconds).toFixed(1)}/s)`,
    },
    { measure: "the fake's own time p50 / p99", figure: latencies(fake, ['p50', 'p99']) },
    {
      measure: 'product overhead per turn p50 / p99',
      figure: `${ms(overheadP50)} / ${ms(overheadP99)}`,
      goal: 'p50 ≤ 20 ms',
      met: overheadP50 <= 20,
    },
    {
      measure: 'the same, one conversation alone: turns p50 / p99; overhead p50 / p99',
      figure:
        `${latencies(alone, ['p50', 'p99'])} (${int(alone.n)} turns, ${(alone.n / f.alone.seconds).toFixed(1)}/s); ` +
        `${ms(aloneOverhead)} / ${ms(alone.p99 - aloneFake.p99)} (fake ${latencies(aloneFake, ['p50', 'p99'])})`,
      goal: 'p50 ≤ 20 ms',
      met: aloneOverhead <= 20,
    },
    {
      measure: 'turns, compactions running: p50 / p95 / p99',
      figure: `${latencies(busy)} (${int(busy.n)} turns)`,
    },
    {
      measure: 'p99 with compactions − p99 without',
      figure: `${increase >= 0 ? '+' : ''}${ms(increase)}`,
      goal: '≤ +50 ms',
      met: increase <= 50,
    },
    {
      measure: 'turns that waited for a compaction',
      figure: waited.n === 0 ? '0' : `${waited.n}, p50 ${ms(waited.p50)}`,
      goal: '0 (background)',
      met: waited.n === 0,
    },
    {
      measure: 'compactions started in phase B',
      figure: `${f.compactions} (${f.summaryCalls} summary calls of ${options.summaryDelayMs} ms)`,
    },
    { measure: 'where turns ran (A), from /metrics', figure: describeTurns(f.quiet.turns) },
    { measure: 'where turns ran (B), from /metrics', figure: describeTurns(f.busy.turns) },
    { measure: 'turn time by where it ran (A), p50 / p99', figure: describeTurnTimes(f.quiet.turns) },
    { measure: 'turn time by where it ran (B), p50 / p99', figure: describeTurnTimes(f.busy.turns) },
    {
      measure: 'turn outcomes (A; B)',
      figure: `${f.quiet.outcomes}; ${f.busy.outcomes}; solo ${f.alone.outcomes}`,
      goal: 'no errors',
      met: errors(f.quiet) === 0 && errors(f.busy) === 0 && errors(f.alone) === 0,
    },
    ...cpuRows(f.quiet.cpu).map((row) => ({ ...row, measure: `${row.measure} (A)` })),
    ...cpuRows(f.busy.cpu).map((row) => ({ ...row, measure: `${row.measure} (B)` })),
  ];
  printTable(
    `bench:load --chat — ${options.chatConversations} conversations (one turn in flight each), ${options.chatSeconds} s per phase, ` +
      `0 ms model; phase B: every ${options.compactEvery}th reply reports ${int(f.high)} prompt tokens ` +
      `(threshold ${int(f.threshold)}, hygiene ${int(Math.floor(CONTEXT_LENGTH * 0.85))})`,
    rows,
    log,
  );
  log('');
  log(`Load average (1 / 5 / 15 min): ${f.loadStart} at the start, ${loadAverage()} at the end.`);
  log(
    "Method: turn latency = POST …/messages (respond: true) → its 200, from this process; the fake's own time = the " +
      "product's last request to each fake posted straight to it from this process (25 each, the stack idle); " +
      'overhead = turn latency − fake time at the same percentile. With one turn in flight per conversation on 2 ' +
      'cores, phase A is a throughput run: a turn costs about 1/(turns per second) of the machine, so 8 in flight ' +
      "queue behind each other; the solo phase is the product's own time per turn.",
  );
  if (waited.n > 0) {
    log(
      `${waited.n} turns of phase B answered with a compaction and waited for it: in this build an automatic ` +
        'compaction blocked its turn (background compaction, issue #11 §4, not in effect), so phase B measures ' +
        'blocking compactions.',
    );
  }
}
