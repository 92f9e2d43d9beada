// The report of `bench:load`'s ingest run (ingestBench.ts): the table with the issue's goals beside the figures, the
// CPU and PostgreSQL rows, and what the run noticed (errors, uncertain conversations).
import { availableParallelism } from 'node:os';
import type { LoadOptions } from '../load.js';
import { beforeFigures } from './before.js';
import type { CpuReport } from './cpu.js';
import type { IngestResult, OfferedResult, StatusReads } from './ingest.js';
import type { IntegrityReport } from './integrity.js';
import { GROUPED_LIMIT, type LimitResult } from './limit.js';
import { type PostgresWaits, postgresWaitRows } from './pgWaits.js';
import {
  cpuPerBatchRows,
  cpuRows,
  cpuSummary,
  int,
  latencies,
  loadAverage,
  ms,
  perSecond,
  printTable,
  type Row,
} from './report.js';
import type { Creation } from './setup.js';
import { summarize } from './stats.js';

/** The open-loop phase (ingestBench.ts runOfferedPhase): batches due at a fixed rate. */
export interface OfferedFigures {
  ingest: OfferedResult;
  reads: StatusReads;
  cpu: CpuReport;
  lags: number[];
  /** How many lags the closed loop recorded before this phase. */
  lagsBefore: number;
  drainSeconds: number | null;
}

/** What one ingest run measured (ingestBench.ts). */
export interface IngestFigures {
  creation: Creation;
  ingest: IngestResult;
  reads: StatusReads;
  drainReads: StatusReads;
  /** The same burst again once drained, by as many new clients (each opens its connection). */
  newClientReads: StatusReads;
  lags: number[];
  drainSeconds: number | null;
  /** null: skipped (--no-offered). */
  offered: OfferedFigures | null;
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
  /** The same rows, GROUPED_LIMIT batches per transaction (null: not measured). */
  groupedLimit: LimitResult | null;
  loadStart: string;
  /** The gateway's append transactions during the load (appendTransactions.ts). */
  transactions: string;
}

/** The rows of the open-loop phase: what was due against what was accepted, and the latencies at that load. */
function offeredRows(options: LoadOptions, o: OfferedFigures): Row[] {
  const rate = perSecond(o.ingest.acceptedMessages, o.ingest.seconds);
  const accept = summarize(o.ingest.latencies);
  const status = summarize(o.reads.latencies);
  const lag = summarize(o.lags);
  const errors = o.ingest.outcomes.total() - o.ingest.acceptedBatches;
  return [
    {
      measure: `open loop: ${int(options.offeredRate)} msg/s due for ${options.offeredSeconds} s, accepted`,
      figure:
        `${int(rate)} msg/s, ${o.ingest.outcomes}` +
        (o.ingest.lateForConversation > 0 ? `, ${o.ingest.lateForConversation} waited for a conversation` : ''),
      goal: 'keeps up, no errors',
      met: errors === 0 && o.ingest.failedBatches === 0 && rate >= 0.97 * options.offeredRate,
    },
    {
      measure: '  accept latency p50 / p95 / p99 (from when due)',
      figure: latencies(accept),
      goal: 'p99 ≤ 100 ms',
      met: accept.p99 <= 100,
    },
    {
      measure: '  status read p50 / p99',
      figure: `${latencies(status, ['p50', 'p99'])}, ${o.reads.timeouts} timeouts / ${o.reads.outcomes.total()}`,
      goal: 'p99 ≤ 50 ms, never a timeout',
      met: status.p99 <= 50 && o.reads.failures === 0,
    },
    {
      measure: '  processing lag p50 / p99 (max); drained',
      figure:
        `${latencies(lag, ['p50', 'p99'])} (${ms(lag.max)}); ` +
        (o.drainSeconds === null ? 'NOT within the drain timeout' : `${o.drainSeconds.toFixed(1)} s after`),
    },
    { measure: '  CPU', figure: cpuSummary(o.cpu) },
  ];
}

/** The table of the ingest run, the goals beside it, and what the run noticed. */
export function reportIngest(options: LoadOptions, f: IngestFigures, log: (line: string) => void): void {
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
  const groupedRate = f.groupedLimit ? perSecond(f.groupedLimit.messages, f.groupedLimit.seconds) : Number.NaN;
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
      measure: 'accept latency p50 / p95 / p99 (closed loop)',
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
    ...(f.offered ? offeredRows(options, f.offered) : []),
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
    {
      measure: `physical limit, ${GROUPED_LIMIT} batches per transaction`,
      figure: f.groupedLimit
        ? `${int(groupedRate)} msg/s from ${f.groupedLimit.connections} connections (product ${(rate / groupedRate).toFixed(2)}×)${f.groupedLimit.errors ? `, ${f.groupedLimit.errors} errors` : ''}`
        : 'not measured',
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
  if (f.groupedLimit?.firstError)
    log(`Grouped limit: ${f.groupedLimit.errors} failed transactions, the first: ${f.groupedLimit.firstError}`);
  if (f.limit?.firstError)
    log(`Physical limit: ${f.limit.errors} failed transactions, the first: ${f.limit.firstError}`);
  if (f.ingest.errorSamples.length > 0)
    log(`Error answers (first ${f.ingest.errorSamples.length}):\n  ${f.ingest.errorSamples.join('\n  ')}`);
  const readErrors = [f.reads, f.drainReads, f.newClientReads].filter((r) => r.failures > 0);
  const outcomes = `during ${f.reads.outcomes}; after ${f.drainReads.outcomes}; new ${f.newClientReads.outcomes}`;
  if (readErrors.length > 0) log(`Status read outcomes: ${outcomes}`);
}
