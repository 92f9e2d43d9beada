// Prometheus metrics (DESIGN.md §6 `/metrics`), one registry per process. Compaction counts and tokens saved are
// read from PostgreSQL at scrape time (so they are right whichever process ran the compaction), from the totals a
// trigger keeps per tenant, trigger and status (migrations/0005): a scrape reads a few rows, not every compaction.
// Phase durations, search latency and the summary quality gate's retention are measured where they happen.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/schema.js';

export interface Metrics {
  registry: Registry;
  phaseDuration: Histogram<'activity' | 'outcome'>;
  searchDuration: Histogram<'path'>;
  httpRequests: Counter<'route' | 'status'>;
  /** Issue #15 §3: share of a window's pinned identifiers and user constraints an LLM summary keeps. */
  summaryRetention: Histogram<'stage'>;
  /** Issue #11: where the gateway's chat turns ran (workers/gateway/chatTurns.ts TurnPath). */
  chatTurns: Counter<'path'>;
  /** Issue #11: how long the gateway's chat turns took (request validated → answer), by where they ran. */
  chatTurnSeconds: Histogram<'path'>;
  /** Issue #11: how long a chat turn waited for the workflow's next rules, by what it would have been judged by. */
  turnRulesWait: Histogram<'standing'>;
  /** Issue #14 §5: requests the gateway refused with 429, by the limit (`requests_per_minute`, …). */
  limitRefusals: Counter<'limit'>;
  /** Issue #11: batches per append transaction of the gateway (infra/db/appendGroups.ts). */
  appendGroupBatches: Histogram<never>;
  /** Issue #11: append groups rolled back (their batches then run alone), by why (appendGroups.ts DissolvedReason). */
  appendGroupsDissolved: Counter<'reason'>;
}

export function createMetrics(options: { db?: Kysely<Database>; defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'dctx_process_' });
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
    new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const phaseDuration = histogram(
    'dctx_activity_duration_seconds',
    'Duration of worker activities (compaction phases, store operations) by activity and outcome',
    ['activity', 'outcome'],
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  );
  const searchDuration = histogram(
    'dctx_search_duration_seconds',
    'Search latency by path (latin, cjk, none)',
    ['path'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  );
  const httpRequests = counter('dctx_http_requests_total', 'HTTP requests by route and status code', [
    'route',
    'status',
  ]);
  const summaryRetention = histogram(
    'dctx_summary_retention_ratio',
    "Share of the window's pinned identifiers and user constraints kept by an LLM summary, before and after the " +
      'quality gate (re-prompt, then deterministic append)',
    ['stage'],
    [0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1],
  );
  const chatTurns = counter(
    'dctx_chat_turns_total',
    'Chat turns by where they ran: gateway_quiet (no notification), gateway_notified (some of its batches ' +
      'notified to the workflow), workflow (the chat-turn update), stored (answered from an earlier attempt)',
    ['path'],
  );
  const chatTurnSeconds = histogram(
    'dctx_chat_turn_seconds',
    'Chat turns answered, by where they ran (as dctx_chat_turns_total): from the validated request to the answer, ' +
      "the model's time included",
    ['path'],
    [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
  const turnRulesWait = histogram(
    'dctx_chat_turn_rules_wait_seconds',
    "How long a chat turn waited for the workflow's next rules (standing: judged = it could have run notified, " +
      'unknown = else it goes to the workflow)',
    ['standing'],
    [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5],
  );
  const appendGroupBatches = histogram(
    'dctx_append_group_batches',
    'Plain batches per append transaction started: 1 unless they arrived while every write slot was busy, then ' +
      "several conversations' batches, of any tenants (a group that rolls back is followed by its batches alone)",
    [],
    [1, 2, 4, 8, 12, 16],
  );
  const appendGroupsDissolved = counter(
    'dctx_append_groups_dissolved_total',
    'Append groups rolled back, their batches then each run alone: lock_timeout (a lock, mostly a conversation row, ' +
      'another writer held past 50 ms), conflict (serialization failure, deadlock), error (anything else, e.g. one ' +
      'batch that cannot be written)',
    ['reason'],
  );
  const db = options.db;
  if (db) {
    const compactions = new Gauge({
      name: 'dctx_compactions',
      help: 'Compactions recorded, by trigger and status (all tenants)',
      labelNames: ['trigger', 'status'] as const,
      registers: [registry],
      async collect() {
        const rows = await sql<{ trigger: string; status: string; n: string }>`
          SELECT "trigger", status, sum(compactions) AS n FROM compaction_totals GROUP BY 1, 2
          HAVING sum(compactions) > 0`.execute(db);
        this.reset();
        for (const r of rows.rows) this.set({ trigger: r.trigger, status: r.status }, Number(r.n));
      },
    });
    const saved = new Gauge({
      name: 'dctx_compaction_tokens_saved',
      help: 'Estimated tokens removed from live transcripts by committed compactions (tokensBefore - tokensAfter)',
      registers: [registry],
      async collect() {
        const rows = await sql<{ saved: string | null }>`
          SELECT sum(tokens_saved) AS saved FROM compaction_totals
           WHERE status IN ('committed', 'fallback')`.execute(db);
        this.set(Number(rows.rows[0]?.saved ?? 0));
      },
    });
    void compactions;
    void saved;
  }
  const limitRefusals = counter(
    'dctx_request_limit_refusals_total',
    'Requests refused with 429 by a request limit of the tenant or key (issue #14 §5), by limit',
    ['limit'],
  );
  return {
    registry,
    phaseDuration,
    searchDuration,
    httpRequests,
    summaryRetention,
    chatTurns,
    chatTurnSeconds,
    turnRulesWait,
    limitRefusals,
    appendGroupBatches,
    appendGroupsDissolved,
  };
}

/** Wraps every activity so its duration lands in `dctx_activity_duration_seconds`. */
export function timeActivities<T extends Record<string, (...args: any[]) => Promise<unknown>>>(
  activities: T,
  histogram: Metrics['phaseDuration'],
): T {
  const timed: Record<string, (...args: any[]) => Promise<unknown>> = {};
  for (const [name, fn] of Object.entries(activities)) {
    timed[name] = async (...args: any[]) => {
      const end = histogram.startTimer({ activity: name });
      try {
        const result = await fn(...args);
        end({ outcome: 'ok' });
        return result;
      } catch (err) {
        end({ outcome: 'error' });
        throw err;
      }
    };
  }
  return timed as T;
}
