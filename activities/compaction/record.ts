// The stored state of one compaction (the `compactions` row) as the phase activities read it. Every phase reads its
// inputs by compaction id from PostgreSQL, so no transcript travels through Temporal payloads.
import { ApplicationFailure } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { StoredPlan, StoredPrune } from '../../contracts/compaction.js';
import type { CompactionRef } from '../../contracts/compactionActivities.js';
import { FailureType } from '../../contracts/failures.js';
import type { ChatMessage, CompactionPlan, CompressionConfig, HostPolicy, Summarizer } from '../../engine/index.js';
import { loadPinsByIds } from '../../infra/db/compactionCommit/rowStates.js';
import { getCompaction } from '../../infra/db/compactions.js';
import { loadRowsByIds } from '../../infra/db/messages.js';
import type { CompactionRow, Database } from '../../infra/db/schema.js';
import { getSession } from '../../infra/db/sessions.js';
import type { AnthropicCompactor } from '../../infra/llm/anthropicCompaction.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import type { WindowCache } from './windowCache.js';

/** The summarizer for a conversation's main model (SPEC §2.3: the summary model defaults to the main model). */
export type SummarizerFor = (target: { model: string | null; provider: string | null }) => Summarizer | null;
/** The compactor of the same summary route when it can summarise into a block (SPEC §19 `anthropic_native`). */
export type AnthropicCompactorFor = (target: {
  model: string | null;
  provider: string | null;
}) => AnthropicCompactor | null;

export interface CompactionActivityDeps {
  db: Kysely<Database>;
  /** The summary model; null: no provider configured, Phase 3 uses the extractive summariser (SPEC §19). */
  summarizer: Summarizer | null;
  /** When given, chooses the summarizer from the session's model and provider; wins over `summarizer`. */
  summarizerFor?: SummarizerFor;
  /** SPEC §19 `summary_backend: anthropic_native`: the session's summary route's compactor; absent: none. */
  anthropicCompactorFor?: AnthropicCompactorFor;
  /** SPEC §19 host policy keys of config.yaml (`summary_backend`); a tenant's policy overrides them. */
  baseHostPolicy?: HostPolicy;
  /** Where the quality gate's retention shares are observed (issue #15 §3); absent: not observed. */
  metrics?: Pick<Metrics, 'summaryRetention'>;
  /** The worker's memory of the windows align read; absent: every phase reads its input from PostgreSQL. */
  windowCache?: WindowCache;
  /** config.yaml's `compression` section (defaults applied): what a plugin engine is built with (SPEC §10.3). */
  baseConfig?: CompressionConfig;
  /** config.yaml's `context.engine` (SPEC §10.3); a tenant's `context.engine` overrides it. Absent: `compressor`. */
  contextEngine?: string;
  /** Where plugin engines are looked for (DURABLE_CONTEXT_PLUGIN_DIR, default `plugins/context_engine/`). */
  pluginDir?: string;
}

/** What a phase needs to read a compaction's input. */
export type SnapshotDeps = Pick<CompactionActivityDeps, 'db' | 'windowCache'>;

export interface CompactionSnapshot {
  record: CompactionRow;
  plan: StoredPlan;
  /** The compaction's input messages, unpruned (frozen when they come from the window cache). */
  input: readonly ChatMessage[];
}

export async function requireRecord(db: Kysely<Database>, ref: CompactionRef): Promise<CompactionRow> {
  const record = await getCompaction(db, ref.tenantId, ref.compactionId);
  if (!record) throw ApplicationFailure.nonRetryable(`compaction ${ref.compactionId} not found`, FailureType.NotFound);
  return record;
}

function requirePlan(record: CompactionRow): StoredPlan {
  if (!record.plan) throw new Error(`compaction ${record.id} has no plan yet (align did not run)`);
  return record.plan;
}

/**
 * The compaction's input messages (unpruned): from the worker's window cache when align ran here, else read back by
 * row id (archived rows stay readable: nothing is deleted).
 */
export async function loadSnapshot(
  deps: SnapshotDeps,
  tenantId: string,
  record: CompactionRow,
): Promise<CompactionSnapshot> {
  const plan = requirePlan(record);
  const kept = deps.windowCache?.get(tenantId, record.id, plan.inputRowIds);
  if (kept) return { record, plan, input: kept };
  const rows = await loadRowsByIds(deps.db, tenantId, plan.inputRowIds);
  if (rows.length !== plan.inputRowIds.length) {
    throw new Error(`compaction ${record.id}: ${plan.inputRowIds.length - rows.length} input row(s) are missing`);
  }
  return { record, plan, input: rows.map((r) => r.message) };
}

/** Per input message: an operator pinned it (SPEC §19 `rehydrate_pinned`), read now (pins change at any time). */
export async function loadPins(db: Kysely<Database>, tenantId: string, plan: StoredPlan): Promise<boolean[]> {
  const pins = await loadPinsByIds(db, tenantId, plan.inputRowIds);
  return pins.map((pinned, i) => {
    if (pinned === undefined) throw new Error(`input row ${plan.inputRowIds[i]} is missing`);
    return pinned;
  });
}

/** The pruned working copy: the input with the stored replacements applied (new objects for changed rows). */
export function applyPrune(input: readonly ChatMessage[], prune: StoredPrune): ChatMessage[] {
  const working = input.slice();
  for (const [index, content] of prune.replacements) {
    const original = working[index];
    if (original) working[index] = { ...original, content };
  }
  return working;
}

/** The snapshot and its pruned working copy (after the prune phase). */
export async function prunedSnapshot(
  deps: SnapshotDeps,
  tenantId: string,
  record: CompactionRow,
): Promise<CompactionSnapshot & { pruned: ChatMessage[] }> {
  const snapshot = await loadSnapshot(deps, tenantId, record);
  const prune = record.prune_result;
  if (!prune) throw new Error(`compaction ${record.id} has no prune result yet`);
  return { ...snapshot, pruned: applyPrune(snapshot.input, prune) };
}

export function planOf(plan: StoredPlan): Pick<CompactionPlan, 'headEnd' | 'cut' | 'reinsertIndex'> {
  return { headEnd: plan.headEnd, cut: plan.cut, reinsertIndex: plan.reinsertIndex };
}

/** The summarizer of a session: chosen by its main model when the worker resolves per model (SPEC §2.3). */
export async function summarizerForSession(
  deps: Pick<CompactionActivityDeps, 'db' | 'summarizer' | 'summarizerFor'>,
  tenantId: string,
  sessionId: string,
): Promise<Summarizer | null> {
  if (!deps.summarizerFor) return deps.summarizer;
  const session = await getSession(deps.db, tenantId, sessionId);
  return deps.summarizerFor({ model: session?.model ?? null, provider: session?.provider ?? null });
}
