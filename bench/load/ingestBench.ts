// The ingest scenario: tenants and conversations over HTTP (creation rate), sustained ingest with status reads and
// CPU sampling, the wait until every conversation applied everything (processing lag), the row count, then the
// physical limit with the same rows, and the table with the issue's goals.
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { LoadOptions } from '../load.js';
import { appendTransactions, describeSpan } from './appendTransactions.js';
import { AppliedTracker, drain, type Poller, pollApplied, pollAppliedOverHttp } from './applied.js';
import { beforeFigures } from './before.js';
import { type CpuReport, sampleCpu } from './cpu.js';
import { JsonHttp } from './http.js';
import { type IngestResult, runIngest, type StatusReads, statusBurst, statusReads } from './ingest.js';
import { countInPostgres, countOverHttp, type IntegrityReport } from './integrity.js';
import { type LimitResult, measureLimit } from './limit.js';
import { ConversationScript, type ScriptOptions } from './messages.js';
import { type PostgresWaits, postgresWaitRows, samplePostgresWaits } from './pgWaits.js';
import {
  cpuPerBatchRows,
  cpuRows,
  int,
  latencies,
  loadAverage,
  ms,
  perSecond,
  printTable,
  type Row,
} from './report.js';
import { type Creation, createConversations, createTenants } from './setup.js';
import type { Stack } from './stack.js';
import { summarize } from './stats.js';

/** Threshold of the default 200,000-token model under the default policy (SPEC §5.6), when the status has none. */
const DEFAULT_THRESHOLD_TOKENS = 150_000;

export interface Logs {
  log: (line: string) => void;
  progress: (line: string) => void;
}

interface Figures {
  creation: Creation;
  ingest: IngestResult;
  reads: StatusReads;
  drainReads: StatusReads;
  /** The same burst again once drained, by as many new clients (each opens its connection). */
  newClientReads: StatusReads;
  lags: number[];
  drainSeconds: number | null;
  unapplied: number;
  uncertain: number;
  poller: { method: string; count: number; meanMs: number };
  integrity: IntegrityReport;
  cpu: CpuReport;
  /** What the product's backends waited for, and the WAL per batch (null: no SQL access to the stack's database). */
  waits: PostgresWaits | null;
  limit: LimitResult | null;
  /** CPU over the physical limit's run (null: not measured). */
  limitCpu: CpuReport | null;
  loadStart: string;
  /** The gateway's append transactions during the load (appendTransactions.ts). */
  transactions: string;
}

export async function runIngestBench(options: LoadOptions, stack: Stack, logs: Logs): Promise<void> {
  const loadStart = loadAverage();
  const runId = `lb${randomBytes(3).toString('hex')}`;
  const conversationsCount = Math.round(options.conversations);
  const clients = Math.round(options.clients);
  if (conversationsCount < clients) throw new Error('--conversations must be at least --clients');
  logs.progress(`bench:load ${runId}: gateway ${stack.url}; load average ${loadStart}`);
  const http = new JsonHttp(stack.url, clients + 4);
  const readsHttp = new JsonHttp(stack.url, 16);
  const newClientsHttp = new JsonHttp(stack.url, clients);

  const tenants = await createTenants(http, stack.adminKey, runId, Math.round(options.tenants));
  logs.progress(`creating ${conversationsCount} conversations from ${clients} clients…`);
  const creation = await createConversations(http, tenants, runId, conversationsCount, clients);
  const conversations = creation.conversations;
  const scriptOptions = (threshold: number): ScriptOptions => ({
    runId,
    thresholdTokens: threshold > 0 ? threshold : DEFAULT_THRESHOLD_TOKENS,
    compact: options.compact === true,
  });
  const targets = conversations.map((conversation) => ({
    conversation,
    script: new ConversationScript(
      conversation.id,
      conversation.index + 1,
      scriptOptions(conversation.thresholdTokens),
    ),
  }));

  const tracker = new AppliedTracker(conversations);
  const acceptedKeys = new Map<string, string[]>();
  const poller: Poller = stack.db
    ? pollApplied(stack.db, tracker, options.pollMs)
    : pollAppliedOverHttp(readsHttp, tracker, 4, options.pollMs);
  const cpu = sampleCpu({ rootPid: stack.rootPid, db: stack.db, database: stack.databaseName });
  const waits = stack.db && stack.databaseName ? samplePostgresWaits(stack.db, stack.databaseName) : null;
  const reads = statusReads(readsHttp, conversations, options.statusRate, options.statusTimeoutMs);
  logs.progress(`ingest: ${options.seconds} s, ${clients} clients, ${conversationsCount} conversations…`);
  let lastReported = 0;
  const transactionsBefore = await appendTransactions(stack.url);
  const ingest = await runIngest({
    http,
    targets,
    clients,
    seconds: options.seconds,
    timeoutMs: options.timeoutMs,
    retries: 3,
    observer: {
      accepted: (conversation, batch, at, stored) => {
        tracker.accepted(conversation, at, stored);
        const keys = acceptedKeys.get(conversation.id) ?? [];
        keys.push(...batch.keys);
        acceptedKeys.set(conversation.id, keys);
      },
      failed: (conversation) => tracker.failed(conversation),
    },
    onSecond: (second, so) => {
      if (second % 5 !== 0 || second === 0) return;
      const last = so.perSecond.slice(lastReported, second).reduce((a, b) => a + (b ?? 0), 0);
      logs.progress(
        `  ${second} s: ${int(so.acceptedMessages)} messages accepted (${int(last / (second - lastReported))}/s ` +
          `in the last ${second - lastReported} s), ${so.failedBatches} failed, ${tracker.unappliedBatches()} batches not applied yet`,
      );
      lastReported = second;
    },
  });
  const transactions = describeSpan(transactionsBefore, await appendTransactions(stack.url));
  await reads.stop();
  const cpuReport = await cpu.stop();
  const waitsReport = await waits?.stop();

  logs.progress(
    `waiting until every conversation has applied everything (${tracker.unappliedBatches()} batches behind)…`,
  );
  // Right after the burst, while the workflows work off what is left: every conversation's status once, read by the
  // clients that posted, over their connections (the issue's "GET …/status right after the burst").
  const [drainSeconds, drainReads] = await Promise.all([
    drain(tracker, (options.drainTimeout ?? Math.max(300, options.seconds * 3)) * 1000),
    statusBurst(http, conversations, clients, options.statusTimeoutMs),
  ]);
  // Again by as many new clients, each first read opening a connection: printed without a goal (right after the
  // load, 32 connections opened at once cost the first reads 40–90 ms here; a plain Node HTTP server 7–24 ms).
  const newClientReads = await statusBurst(newClientsHttp, conversations, clients, options.statusTimeoutMs);
  await poller.stop();
  const polls = poller.polls();

  logs.progress('counting the rows…');
  const integrity =
    stack.db && stack.databaseUrl
      ? await countInPostgres(stack.db, stack.databaseUrl, runId, conversations, acceptedKeys, options.compact === true)
      : await countOverHttp(readsHttp, conversations, acceptedKeys, options.compact === true);

  let limit: LimitResult | null = null;
  let limitCpu: CpuReport | null = null;
  if (options.limit && stack.db && stack.databaseUrl) {
    const seconds = options.limitSeconds ?? options.seconds;
    logs.progress(
      `physical limit: the same rows straight into PostgreSQL from ${clients} connections for ${seconds} s…`,
    );
    const sampler = sampleCpu({ rootPid: null, db: stack.db, database: stack.databaseName });
    limit = await measureLimit({
      databaseUrl: stack.databaseUrl,
      prefix: runId,
      tenants,
      conversations: conversationsCount,
      connections: clients,
      seconds,
      script: scriptOptions(conversations[0]?.thresholdTokens ?? 0),
    });
    limitCpu = await sampler.stop();
  }
  http.close();
  readsHttp.close();
  newClientsHttp.close();

  report(
    options,
    {
      creation,
      ingest,
      reads,
      drainReads,
      newClientReads,
      lags: tracker.lags,
      drainSeconds,
      unapplied: tracker.unappliedBatches(),
      uncertain: tracker.uncertainConversations(),
      poller: {
        method: stack.db
          ? `SQL poll of conversations.applied_seq of the conversations behind, every ${options.pollMs} ms`
          : `GET …/status of the conversations behind, every ${options.pollMs} ms`,
        ...polls,
      },
      integrity,
      cpu: cpuReport,
      waits: waitsReport ?? null,
      limit,
      limitCpu,
      loadStart,
      transactions,
    },
    logs.log,
  );
  const stderr = stack.stderr().trim();
  if (stderr)
    logs.log(`\ndev.ts wrote to stderr during the run (last lines):\n${stderr.split('\n').slice(-15).join('\n')}`);
}

function report(options: LoadOptions, f: Figures, log: (line: string) => void): void {
  const rate = perSecond(f.ingest.acceptedMessages, f.ingest.seconds);
  const accept = summarize(f.ingest.latencies);
  const lag = summarize(f.lags);
  const created = summarize(f.creation.latencies);
  const creationRate = perSecond(f.creation.conversations.length, f.creation.seconds);
  const status = summarize(f.reads.latencies);
  const drainStatus = summarize(f.drainReads.latencies);
  const newClientStatus = summarize(f.newClientReads.latencies);
  const errors = f.ingest.outcomes.total() - f.ingest.acceptedBatches;
  const limitRate = f.limit ? perSecond(f.limit.messages, f.limit.seconds) : Number.NaN;
  const limitLatency = f.limit ? summarize(f.limit.latencies) : null;
  const ratio = rate / limitRate;
  const before = beforeFigures(f.creation.conversations.length, Math.round(options.clients));
  const rows: Row[] = [
    {
      measure: 'messages accepted per second',
      figure: int(rate),
      before: before.acceptedPerSecond,
      goal: '≥ 1,000 (10,000 conv., 64 clients)',
      met: rate >= 1000,
    },
    {
      measure: 'accept latency p50 / p95 / p99',
      figure: latencies(accept),
      before: before.acceptLatency,
      goal: 'p99 ≤ 100 ms',
      met: accept.p99 <= 100,
    },
    {
      measure: 'ingest requests: outcomes',
      figure: `${f.ingest.outcomes} (${f.ingest.retries} retries, ${f.ingest.failedBatches} batches failed)`,
      goal: 'no errors',
      met: errors === 0,
    },
    { measure: 'append transactions during the load (/metrics)', figure: f.transactions },
    {
      measure: 'processing lag p50 / p99 (max)',
      figure:
        `${latencies(lag, ['p50', 'p99'])} (${ms(lag.max)})` +
        (f.unapplied > 0 ? `, ${int(f.unapplied)} batches never applied: not in these` : ''),
    },
    {
      measure: 'all applied after the load',
      figure:
        f.drainSeconds === null
          ? `NOT within the drain timeout: ${int(f.unapplied)} batches unapplied`
          : `${f.drainSeconds.toFixed(1)} s after the last accept`,
    },
    {
      measure: 'conversations created per second',
      figure: int(creationRate),
      before: before.creation,
      goal: '≥ 200 per second',
      met: creationRate >= 200,
    },
    {
      measure: 'create latency p50 / p99',
      figure: latencies(created, ['p50', 'p99']),
      before: before.createLatency,
    },
    {
      measure: 'status read during load p50 / p99',
      figure: `${latencies(status, ['p50', 'p99'])}, ${f.reads.timeouts} timeouts / ${f.reads.outcomes.total()}`,
      goal: 'p99 ≤ 50 ms, never a timeout',
      met: status.p99 <= 50 && f.reads.failures === 0,
    },
    {
      measure: 'status read right after the load (every conv.) p50 / p99',
      figure: `${latencies(drainStatus, ['p50', 'p99'])}, ${f.drainReads.timeouts} timeouts / ${f.drainReads.outcomes.total()}`,
      before: before.statusAfterLoad,
      goal: 'p99 ≤ 50 ms, never a timeout',
      met: drainStatus.n === 0 ? undefined : drainStatus.p99 <= 50 && f.drainReads.failures === 0,
    },
    {
      measure: 'the same once drained, by new clients (new connections)',
      figure: `${latencies(newClientStatus, ['p50', 'p99'])}, ${f.newClientReads.timeouts} timeouts / ${f.newClientReads.outcomes.total()}`,
    },
    {
      measure: 'rows lost / duplicated',
      figure: `${f.integrity.lost} / ${f.integrity.duplicated} of ${int(f.integrity.expected)} (${f.integrity.outOfOrder} conv. out of order)`,
      before: before.rows,
      goal: '0 / 0',
      met: f.integrity.lost === 0 && f.integrity.duplicated === 0 && f.integrity.outOfOrder === 0,
    },
    {
      measure: 'physical limit (same rows, straight SQL)',
      figure: f.limit
        ? `${int(limitRate)} msg/s, tx p50 / p99 ${latencies(limitLatency!, ['p50', 'p99'])}${f.limit.errors ? `, ${f.limit.errors} errors` : ''}`
        : 'not measured',
      before: before.limit,
    },
    {
      measure: 'ratio product / limit',
      figure: f.limit ? `${ratio.toFixed(2)}×` : '—',
      before: before.ratio,
      goal: '≥ 0.5',
      met: f.limit ? ratio >= 0.5 : undefined,
    },
    ...cpuRows(f.cpu).map((row) =>
      row.measure === '  CPU Temporal dev server' ? { ...row, before: before.temporalCpu } : row,
    ),
    ...cpuPerBatchRows(
      { cpu: f.cpu, batches: f.ingest.acceptedBatches },
      f.limit && f.limitCpu ? { cpu: f.limitCpu, batches: f.limit.latencies.length } : null,
    ),
    ...(f.waits ? postgresWaitRows(f.waits, f.ingest.acceptedBatches) : []),
  ];
  const mode = options.compact ? ', --compact' : '';
  printTable(
    `bench:load — ${f.creation.conversations.length} conversations, ${Math.round(options.clients)} clients, ` +
      `${options.tenants} tenants, ${options.seconds} s${mode} (${availableParallelism()} cores)`,
    rows,
    log,
    before.title,
  );
  log('');
  log(`Load average (1 / 5 / 15 min): ${f.loadStart} at the start, ${loadAverage()} at the end.`);
  log(
    `Method: accept latency = request start → 2xx (a retry counts from the first attempt); lag = 2xx → the first poll ` +
      `that saw applied_seq cover the batch, taken at the middle of the interval since the previous poll ` +
      `(${f.poller.method}; ${f.poller.count} polls, ${f.poller.meanMs.toFixed(1)} ms each); ` +
      `rows counted by ${f.integrity.source}.`,
  );
  if (f.integrity.storedWithoutAccept > 0) {
    log(
      `${f.integrity.storedWithoutAccept} messages are stored although their request got no 2xx (failed after commit).`,
    );
  }
  if (f.uncertain > 0)
    log(`${f.uncertain} conversations had a batch that never got a 2xx: left out of the lag figures.`);
  if (f.limit?.firstError)
    log(`Physical limit: ${f.limit.errors} failed transactions, the first: ${f.limit.firstError}`);
  if (f.ingest.errorSamples.length > 0)
    log(`Error answers (first ${f.ingest.errorSamples.length}):\n  ${f.ingest.errorSamples.join('\n  ')}`);
  const readErrors = [f.reads, f.drainReads, f.newClientReads].filter((r) => r.failures > 0);
  const outcomes = `during ${f.reads.outcomes}; after ${f.drainReads.outcomes}; new ${f.newClientReads.outcomes}`;
  if (readErrors.length > 0) log(`Status read outcomes: ${outcomes}`);
}
