// The four compaction phases as Temporal activities (DESIGN.md §3, SPEC §8.1): align → prune → summarize →
// reassemble. Boundaries are computed on the unpruned input (§8.1), so align runs first. Each activity is thin
// (load by compaction id → pure engine step → persist) and idempotent: a retry finds its stored result.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { StoredStats } from '../contracts/compaction.js';
import { FailureType } from '../contracts/failures.js';
import { toStorableText } from '../contracts/storableText.js';
import {
  buildFallbackSummary,
  buildSummaryRequest,
  type ChatMessage,
  type CompressionStats,
  compactionStats,
  estimateMessagesTokensRough,
  interpretSummaryReply,
  isSummaryMessage,
  messageText,
  planCompaction,
  prunePhase,
  reassemblePhase,
  type Summarizer,
  type SummaryFailureClass,
  summarySimilarity,
  summaryText,
  unchangedStats,
} from '../engine/index.js';
import { commitInPlace, commitRotation } from '../infra/db/compactionCommit/index.js';
import { createCompactionRecord, getCompaction, updateCompaction } from '../infra/db/compactions.js';
import { loadTranscript } from '../infra/db/messages.js';
import type { CompactionRow, Database } from '../infra/db/schema.js';
import { getSession } from '../infra/db/sessions.js';
import { LlmFailure } from '../infra/llm/errors.js';
import {
  applyPrune,
  type CompactionSnapshot,
  loadSnapshot,
  planOf,
  type StoredPlan,
  type StoredPrune,
} from './compactionSnapshot.js';

export interface CompactionRef {
  tenantId: string;
  compactionId: string;
}

export interface BeginCompactionInput extends CompactionRef {
  sessionId: string;
  conversationId: string;
  seq: number;
  trigger: CompactionRow['trigger'];
  inPlace: boolean;
  focusTopic: string | null;
  previousSummary: string | null;
}

export interface AlignInput extends CompactionRef {
  protectFirstN: number;
  protectLastN: number;
  minTailUserMessages: number;
  tailTokenBudget: number;
  contextLength: number;
  /** Compact only the history before this row (hygiene: the incoming message and what follows stay out). */
  beforeRowId?: number | null;
}

export interface AlignResult {
  noop: false | string;
  headEnd: number;
  cut: number;
  inputRows: number;
  tokensBefore: number;
}

export type SummarizeResult =
  | { ok: true; summarizerCalled: true }
  | { ok: false; failureClass: SummaryFailureClass; summarizerCalled: boolean; reason: string };

export interface ReassembleInput extends CompactionRef {
  /** Set when the summary failed: build the fallback summary of SPEC §9.5 with this class. */
  fallbackFailureClass: SummaryFailureClass | null;
  /** Estimated tokens the result must save to be committed (SPEC §19 min_gain_tokens; hygiene ≥ 1, §11.3); null: none. */
  requiredGain: number | null;
  /** Rotation target (SPEC §13.3), generated in the workflow; null for in-place. */
  newSessionId: string | null;
  platform: string;
}

export interface ReassembleResult {
  status: 'committed' | 'fallback' | 'rejected';
  sessionId: string;
  summaryBody: string | null;
  stats: CompressionStats;
  /** The conversation's totals after the commit (null when nothing was committed, or without a record). */
  totals: { version: number; activeMessages: number; activeTokens: number } | null;
  /** SPEC §19 fixed point: similarity of the new summary body to the previous one (null without one). */
  similarity: number | null;
}

/** The summarizer for a conversation's main model (SPEC §2.3: the summary model defaults to the main model). */
export type SummarizerFor = (target: { model: string | null; provider: string | null }) => Summarizer | null;

export interface CompactionActivityDeps {
  db: Kysely<Database>;
  /** The summary model; null: no provider configured, every compaction uses the fallback summary (DESIGN §5). */
  summarizer: Summarizer | null;
  /** When given, chooses the summarizer from the session's model and provider; wins over `summarizer`. */
  summarizerFor?: SummarizerFor;
}

export async function requireRecord(db: Kysely<Database>, ref: CompactionRef): Promise<CompactionRow> {
  const record = await getCompaction(db, ref.tenantId, ref.compactionId);
  if (!record) throw ApplicationFailure.nonRetryable(`compaction ${ref.compactionId} not found`, FailureType.NotFound);
  return record;
}

export function createCompactionActivities(deps: CompactionActivityDeps) {
  const { db } = deps;

  async function snapshotWithPrune(ref: CompactionRef): Promise<CompactionSnapshot & { pruned: ChatMessage[] }> {
    const record = await requireRecord(db, ref);
    const snapshot = await loadSnapshot(db, ref.tenantId, record);
    const prune = record.prune_result;
    if (!prune) throw new Error(`compaction ${ref.compactionId} has no prune result yet`);
    return { ...snapshot, pruned: applyPrune(snapshot.input, prune) };
  }

  return {
    /** Creates the compaction record (idempotent: a retry finds it). */
    async beginCompaction(input: BeginCompactionInput): Promise<void> {
      await createCompactionRecord(db, input.tenantId, {
        id: input.compactionId,
        sessionId: input.sessionId,
        conversationId: input.conversationId,
        seq: input.seq,
        trigger: input.trigger,
        inPlace: input.inPlace,
        focusTopic: input.focusTopic,
        previousSummary: input.previousSummary,
      });
    },

    /** Phase 2 (S1–S4, and the empty-window check of §8.5.1) on the unpruned active transcript. */
    async align(input: AlignInput): Promise<AlignResult> {
      const record = await requireRecord(db, input);
      const stored = record.plan;
      if (stored) {
        return {
          noop: stored.noop,
          headEnd: stored.headEnd,
          cut: stored.cut,
          inputRows: stored.inputRowIds.length,
          tokensBefore: stored.tokensBefore,
        };
      }
      const transcript = await loadTranscript(db, input.tenantId, record.session_id);
      // Hygiene compacts the history before the incoming message (SPEC §11.3); the rest is kept after the output.
      const end = input.beforeRowId ? transcript.findIndex((r) => r.id === input.beforeRowId) : -1;
      const rows = end >= 0 ? transcript.slice(0, end) : transcript;
      const messages = rows.map((r) => r.message);
      const tokensBefore = estimateMessagesTokensRough(messages);
      const boundaries = planCompaction(messages, {
        protectFirstN: input.protectFirstN,
        protectLastN: input.protectLastN,
        minTailUserMessages: input.minTailUserMessages,
        tailTokenBudget: input.tailTokenBudget,
        previousSummary: record.previous_summary,
      });
      let noop: false | string = boundaries.noop;
      if (noop === false) {
        const request = buildSummaryRequest(messages, boundaries, {
          previousSummary: record.previous_summary,
          focusTopic: record.focus_topic,
          contextLength: input.contextLength,
        });
        if (request.noop !== false) noop = request.noop;
      }
      const plan: StoredPlan = {
        headEnd: boundaries.headEnd,
        cut: boundaries.cut,
        reinsertIndex: boundaries.reinsertIndex,
        noop,
        inputRowIds: rows.map((r) => r.id),
        tokensBefore,
        contextLength: input.contextLength,
      };
      const patch: Parameters<typeof updateCompaction>[3] = { plan: JSON.stringify(plan) };
      if (noop !== false) {
        Object.assign(patch, {
          status: 'noop',
          stats: JSON.stringify(unchangedStats(tokensBefore, { noop: noop as never })),
          completed_at: new Date(),
        });
      }
      await updateCompaction(db, input.tenantId, input.compactionId, patch);
      return { noop, headEnd: plan.headEnd, cut: plan.cut, inputRows: rows.length, tokensBefore };
    },

    /** Phase 1 (S5): dedup and clear old tool output on the working copy; stores only the changed rows. */
    async prune(ref: CompactionRef): Promise<{ prunedCount: number }> {
      const record = await requireRecord(db, ref);
      const existing = record.prune_result;
      if (existing) return { prunedCount: existing.prunedCount };
      const { input, plan } = await loadSnapshot(db, ref.tenantId, record);
      const result = prunePhase(input, plan);
      const replacements: StoredPrune['replacements'] = [];
      result.messages.forEach((m, i) => {
        if (m !== input[i] && typeof m.content === 'string') replacements.push([i, m.content]);
      });
      const prune: StoredPrune = { prunedCount: result.prunedCount, replacements };
      await updateCompaction(db, ref.tenantId, ref.compactionId, { prune_result: JSON.stringify(prune) });
      return { prunedCount: prune.prunedCount };
    },

    /**
     * Phase 3 (S6): one summarizer call per attempt; the retry policy lives in the workflow (SPEC §9.2). Rejects on
     * failure — an empty reply is non-retryable — and never stores error text as a summary.
     */
    async summarize(ref: CompactionRef): Promise<SummarizeResult> {
      const { record, plan, pruned } = await snapshotWithPrune(ref);
      if (record.summary_body) return { ok: true, summarizerCalled: true };
      const summarizer = await summarizerForSession(deps, ref.tenantId, record.session_id);
      if (!summarizer) {
        return { ok: false, failureClass: 'error', summarizerCalled: false, reason: 'no summary provider configured' };
      }
      const built = buildSummaryRequest(pruned, plan, {
        previousSummary: record.previous_summary,
        focusTopic: record.focus_topic,
        contextLength: plan.contextLength,
      });
      if (built.noop !== false) {
        throw ApplicationFailure.nonRetryable('window has no turns to summarise', FailureType.NoWindow);
      }
      const attempt = Context.current().info.attempt;
      await updateCompaction(db, ref.tenantId, ref.compactionId, { attempts: attempt });
      let reply: unknown;
      try {
        reply = await summarizer(built.request);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await updateCompaction(db, ref.tenantId, ref.compactionId, { error: toStorableText(message.slice(0, 2_000)) });
        if (err instanceof ApplicationFailure || err instanceof LlmFailure) throw err;
        throw ApplicationFailure.retryable(message, 'SummarizerError');
      }
      const outcome = interpretSummaryReply(reply);
      if (!outcome.ok) {
        await updateCompaction(db, ref.tenantId, ref.compactionId, { error: 'summary reply was empty' });
        throw ApplicationFailure.nonRetryable('summary reply was empty', FailureType.EmptySummary);
      }
      // A summary is derived text: characters PostgreSQL cannot store are replaced, so it can always be committed.
      await updateCompaction(db, ref.tenantId, ref.compactionId, {
        summary_body: toStorableText(outcome.body),
        failure_class: null,
        error: null,
      });
      return { ok: true, summarizerCalled: true };
    },

    /** Phase 4 (S7–S8) and the commit of SPEC §13.2 / §13.3, in one transaction, idempotent by compaction id. */
    async reassemble(input: ReassembleInput): Promise<ReassembleResult> {
      const { record, plan, input: messages, pruned } = await snapshotWithPrune(input);
      const done = committedResult(record);
      if (done) return done;
      const llmBody = record.summary_body;
      const failureClass = llmBody ? null : (input.fallbackFailureClass ?? record.failure_class ?? 'error');
      const summaryBody =
        llmBody ??
        toStorableText(
          buildFallbackSummary(messages, plan, {
            previousSummary: record.previous_summary,
            failureClass: failureClass as SummaryFailureClass,
          }),
        );
      const output = reassemblePhase(pruned, messages, planOf(plan), summaryBody, {
        previousSummary: record.previous_summary,
      });
      const fallbackUsed = llmBody === null;
      const stats = compactionStats({
        tokensBefore: plan.tokensBefore,
        output,
        prunedCount: record.prune_result?.prunedCount ?? 0,
        plan,
        fallbackUsed,
        summaryBody,
      });
      const similarity =
        record.previous_summary === null ? null : summarySimilarity(record.previous_summary, summaryBody);
      if (input.requiredGain !== null && stats.tokensBefore - stats.tokensAfter < input.requiredGain) {
        // SPEC §19 minimum gain (and §11.3 for hygiene): a result that does not save enough is not committed.
        await updateCompaction(db, input.tenantId, input.compactionId, {
          status: 'rejected',
          stats: JSON.stringify(stats),
          failure_class: failureClass,
          completed_at: new Date(),
        });
        return { status: 'rejected', sessionId: record.session_id, summaryBody: null, stats, totals: null, similarity };
      }
      const summaryIndex = findSummaryIndex(output, summaryBody);
      if (failureClass !== null) {
        await updateCompaction(db, input.tenantId, input.compactionId, { failure_class: failureClass });
      }
      const commit = {
        compactionId: input.compactionId,
        expectedRowIds: plan.inputRowIds,
        output,
        summaryIndex,
        summaryBody,
        fallbackUsed,
        // activeMessages rides along so that a retry after the commit can report it (committedResult).
        stats: { ...stats, activeMessages: output.length },
        platform: input.platform,
      };
      const rotate = input.newSessionId !== null && record.in_place === false;
      const committed = rotate
        ? await commitRotation(db, input.tenantId, {
            ...commit,
            oldSessionId: record.session_id,
            newSessionId: input.newSessionId as string,
          })
        : await commitInPlace(db, input.tenantId, { ...commit, sessionId: record.session_id });
      return {
        status: fallbackUsed ? 'fallback' : 'committed',
        sessionId: committed.sessionId,
        summaryBody,
        stats,
        totals: committed.totals,
        similarity,
      };
    },

    /** Records how a compaction ended when no commit happened (abort, failure after retries). */
    async recordCompactionEnd(
      input: CompactionRef & {
        status: 'aborted' | 'failed';
        error: string | null;
        failureClass: SummaryFailureClass | null;
      },
    ): Promise<void> {
      const record = await requireRecord(db, input);
      if (record.status === 'committed' || record.status === 'fallback') return;
      const plan = record.plan;
      await updateCompaction(db, input.tenantId, input.compactionId, {
        status: input.status,
        error: input.error ?? record.error,
        failure_class: input.failureClass,
        stats: plan ? JSON.stringify(unchangedStats(plan.tokensBefore, { aborted: true })) : null,
        completed_at: new Date(),
      });
    },
  };
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

/**
 * A retry after a successful commit returns what was committed (totals null: the commit's own totals are gone, the
 * workflow keeps the ones it has; the next notification brings fresh ones).
 */
function committedResult(record: CompactionRow): ReassembleResult | null {
  if (record.status !== 'committed' && record.status !== 'fallback') return null;
  // The stored stats also carry the store's bookkeeping (commit, replay): report only CompressionStats.
  const { activeMessages: _activeMessages, commit: _commit, replay: _replay, ...stats } = record.stats as StoredStats;
  return {
    status: record.status,
    sessionId: record.new_session_id ?? record.session_id,
    summaryBody: record.summary_body,
    stats,
    totals: null,
    similarity:
      record.previous_summary === null || record.summary_body === null
        ? null
        : summarySimilarity(record.previous_summary, record.summary_body),
  };
}

/** The output row that carries the summary (standalone or merged, SPEC §8.6.2). */
export function findSummaryIndex(output: readonly ChatMessage[], summaryBody: string): number {
  const text = summaryText(summaryBody);
  const index = output.findIndex((m) => isSummaryMessage(m) && messageText(m).trimStart().startsWith(text));
  if (index < 0) throw new Error('reassembled output carries no summary row');
  return index;
}

export type CompactionActivities = ReturnType<typeof createCompactionActivities>;
