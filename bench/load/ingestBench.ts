// The ingest scenario: tenants and conversations over HTTP (creation rate), sustained ingest in a closed loop with
// status reads and CPU sampling, the wait until every conversation applied everything (processing lag), the status
// bursts, then batches due at the goal's rate in an open loop (the latency at a load) and its drain, the row count of
// both, then the physical limit with the same rows (a batch per transaction, then GROUPED_LIMIT per transaction);
// the table with the goals is ingestReport.ts's.
import { randomBytes } from 'node:crypto';
import type { LoadOptions } from '../load.js';
import { appendTransactions, describeSpan } from './appendTransactions.js';
import { AppliedTracker, drain, type Poller, pollApplied, pollAppliedOverHttp } from './applied.js';
import { type CpuReport, sampleCpu } from './cpu.js';
import { JsonHttp } from './http.js';
import { type IngestObserver, type IngestTarget, runIngest, runOffered, statusBurst, statusReads } from './ingest.js';
import { type OfferedFigures, reportIngest } from './ingestReport.js';
import { countInPostgres, countOverHttp } from './integrity.js';
import { GROUPED_LIMIT, type LimitResult, measureLimit } from './limit.js';
import { ConversationScript, type ScriptOptions } from './messages.js';
import { samplePostgresWaits } from './pgWaits.js';
import { int, loadAverage } from './report.js';
import { type BenchConversation, createConversations, createTenants } from './setup.js';
import type { Stack } from './stack.js';

/** Threshold of the default 200,000-token model under the default policy (SPEC §5.6), when the status has none. */
const DEFAULT_THRESHOLD_TOKENS = 150_000;

export interface Logs {
  log: (line: string) => void;
  progress: (line: string) => void;
}

/** Tallies every accepted batch into the lag tracker and the keys the row count checks. */
function recordInto(tracker: AppliedTracker, acceptedKeys: Map<string, string[]>): IngestObserver {
  return {
    accepted: (conversation, batch, at, stored) => {
      tracker.accepted(conversation, at, stored);
      const keys = acceptedKeys.get(conversation.id) ?? [];
      keys.push(...batch.keys);
      acceptedKeys.set(conversation.id, keys);
    },
    failed: (conversation) => tracker.failed(conversation),
  };
}

interface OfferedContext {
  http: JsonHttp;
  readsHttp: JsonHttp;
  conversations: BenchConversation[];
  targets: IngestTarget[];
  tracker: AppliedTracker;
  acceptedKeys: Map<string, string[]>;
  stack: Stack;
}

/**
 * Once the closed loop is drained: batches due at `--offered-rate` messages a second for `--offered-seconds` over the
 * same conversations and connections (open loop), with the status reads and CPU sampling of the closed loop, then
 * the wait until everything is applied again. Its rows land in the same row count.
 */
async function runOfferedPhase(options: LoadOptions, c: OfferedContext, logs: Logs): Promise<OfferedFigures> {
  const lagsBefore = c.tracker.lags.length;
  const messagesPerBatch = 2;
  logs.progress(
    `open loop: ${int(options.offeredRate)} messages a second due for ${options.offeredSeconds} s over ` +
      `${Math.round(options.clients)} connections…`,
  );
  const cpu = sampleCpu({ rootPid: c.stack.rootPid, db: c.stack.db, database: c.stack.databaseName });
  const reads = statusReads(c.readsHttp, c.conversations, options.statusRate, options.statusTimeoutMs);
  const ingest = await runOffered({
    http: c.http,
    targets: c.targets,
    batchesPerSecond: options.offeredRate / messagesPerBatch,
    seconds: options.offeredSeconds,
    timeoutMs: options.timeoutMs,
    retries: 3,
    observer: recordInto(c.tracker, c.acceptedKeys),
  });
  await reads.stop();
  const cpuReport = await cpu.stop();
  const drainSeconds = await drain(c.tracker, Math.max(300, options.offeredSeconds * 3) * 1000);
  return { ingest, reads, cpu: cpuReport, lags: c.tracker.lags.slice(lagsBefore), lagsBefore, drainSeconds };
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
    observer: recordInto(tracker, acceptedKeys),
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
  // clients that posted, over their connections (the "GET …/status right after the burst").
  const [drainSeconds, drainReads] = await Promise.all([
    drain(tracker, (options.drainTimeout ?? Math.max(300, options.seconds * 3)) * 1000),
    statusBurst(http, conversations, clients, options.statusTimeoutMs),
  ]);
  // Again by as many new clients, each first read opening a connection: printed without a goal (right after the
  // load, 32 connections opened at once cost the first reads 40–90 ms here; a plain Node HTTP server 7–24 ms).
  const newClientReads = await statusBurst(newClientsHttp, conversations, clients, options.statusTimeoutMs);
  const offered = options.offered
    ? await runOfferedPhase(options, { http, readsHttp, conversations, targets, tracker, acceptedKeys, stack }, logs)
    : null;
  await poller.stop();
  const polls = poller.polls();

  logs.progress('counting the rows…');
  const integrity =
    stack.db && stack.databaseUrl
      ? await countInPostgres(stack.db, stack.databaseUrl, runId, conversations, acceptedKeys, options.compact === true)
      : await countOverHttp(readsHttp, conversations, acceptedKeys, options.compact === true);

  let limit: LimitResult | null = null;
  let limitCpu: CpuReport | null = null;
  let groupedLimit: LimitResult | null = null;
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
    // The ceiling of committing in groups: as many batches in flight, GROUPED_LIMIT per transaction.
    const connections = Math.max(1, Math.round(clients / GROUPED_LIMIT));
    logs.progress(
      `physical limit, grouped: ${GROUPED_LIMIT} batches per transaction, tenants mixed, from ${connections} connections for ${seconds} s…`,
    );
    groupedLimit = await measureLimit({
      databaseUrl: stack.databaseUrl,
      prefix: `${runId}g`,
      tenants,
      conversations: conversationsCount,
      connections,
      seconds,
      script: scriptOptions(conversations[0]?.thresholdTokens ?? 0),
      perTransaction: GROUPED_LIMIT,
    });
  }
  http.close();
  readsHttp.close();
  newClientsHttp.close();

  reportIngest(
    options,
    {
      creation,
      ingest,
      reads,
      drainReads,
      newClientReads,
      lags: offered ? tracker.lags.slice(0, offered.lagsBefore) : tracker.lags,
      drainSeconds,
      offered,
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
      groupedLimit,
      loadStart,
      transactions,
    },
    logs.log,
  );
  const stderr = stack.stderr().trim();
  if (stderr)
    logs.log(`\ndev.ts wrote to stderr during the run (last lines):\n${stderr.split('\n').slice(-15).join('\n')}`);
}
