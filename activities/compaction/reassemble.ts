// Phase 4 (S7–S8, SPEC §8.6) and the commit of SPEC §13.2 / §13.3 in one transaction, idempotent by compaction id;
// and the record of a compaction that ended without a commit (abort, failure after retries).
import type { StoredStats, SummaryRetention } from '../../contracts/compaction.js';
import {
  type CompactionEnd,
  contentFreeStats,
  type ReassembleInput,
  type ReassembleResult,
} from '../../contracts/compactionActivities.js';
import { toStorableText } from '../../contracts/storableText.js';
import {
  buildFallbackSummary,
  type ChatMessage,
  compactionStats,
  insertAfterSummary,
  isSummaryMessage,
  messageText,
  pinnedToRehydrate,
  reassemblePhase,
  type SummaryFailureClass,
  summaryText,
  unchangedStats,
} from '../../engine/index.js';
import { commitCompaction } from '../../infra/db/compactionCommit/index.js';
import { isCommitted, updateCompaction } from '../../infra/db/compactions.js';
import type { CompactionRow } from '../../infra/db/schema.js';
import { type CompactionActivityDeps, loadPins, planOf, prunedSnapshot, requireRecord } from './record.js';
import { bodySimilarity, hostPolicyForTenant, withPolicyPointer } from './summaryBackend.js';

/** The output row that carries the summary (standalone or merged, SPEC §8.6.2). */
export function findSummaryIndex(output: readonly ChatMessage[], summaryBody: string): number {
  const text = summaryText(summaryBody);
  const index = output.findIndex((m) => isSummaryMessage(m) && messageText(m).trimStart().startsWith(text));
  if (index < 0) throw new Error('reassembled output carries no summary row');
  return index;
}

/**
 * A retry after a successful commit returns what was committed (totals null: the commit's own totals are gone, the
 * workflow keeps the ones it has; the next notification brings fresh ones).
 */
/** The quality gate's retention shares the summarize activity recorded (LLM summaries only). */
function retentionOf(record: CompactionRow): SummaryRetention | null {
  if (record.retention_before === null || record.retention_after === null) return null;
  return { before: record.retention_before, after: record.retention_after };
}

function committedResult(record: CompactionRow): ReassembleResult | null {
  if (record.status !== 'committed' && record.status !== 'fallback') return null;
  // The stored stats also carry the store's bookkeeping (commit, replay): report only CompressionStats.
  const { activeMessages: _activeMessages, commit: _commit, replay: _replay, ...stats } = record.stats as StoredStats;
  return {
    status: record.status,
    sessionId: record.new_session_id ?? record.session_id,
    stats: contentFreeStats(stats),
    retention: retentionOf(record),
    totals: null,
    similarity: bodySimilarity(record.previous_summary, record.summary_body),
  };
}

export function createReassembleActivities(
  deps: Pick<CompactionActivityDeps, 'db' | 'baseHostPolicy' | 'windowCache'>,
) {
  const { db, windowCache } = deps;
  return {
    async reassemble(input: ReassembleInput): Promise<ReassembleResult> {
      const record = await requireRecord(db, input);
      const done = committedResult(record);
      if (done) return done;
      const { plan, input: messages, pruned } = await prunedSnapshot(deps, input.tenantId, record);
      const llmBody = record.summary_body;
      const failureClass: SummaryFailureClass | null = llmBody
        ? null
        : (input.fallbackFailureClass ?? record.failure_class ?? 'error');
      const body =
        llmBody ??
        toStorableText(
          buildFallbackSummary(messages, plan, {
            previousSummary: record.previous_summary,
            failureClass: failureClass ?? 'error',
          }),
        );
      const policy = await hostPolicyForTenant(deps, input.tenantId);
      const summaryBody = withPolicyPointer(body, policy, record.conversation_id);
      const reassembled = reassemblePhase(pruned, messages, planOf(plan), summaryBody, {
        previousSummary: record.previous_summary,
      });
      // SPEC §19 rehydrate_pinned: pinned messages the summary replaced come back right after it.
      const output = policy.rehydratePinned
        ? insertAfterSummary(
            reassembled,
            findSummaryIndex(reassembled, summaryBody),
            pinnedToRehydrate(messages, await loadPins(db, input.tenantId, plan), plan),
          )
        : reassembled;
      const fallbackUsed = llmBody === null;
      const stats = compactionStats({
        tokensBefore: plan.tokensBefore,
        output,
        prunedCount: record.prune_result?.prunedCount ?? 0,
        plan,
        fallbackUsed,
        summaryBody,
      });
      const similarity = bodySimilarity(record.previous_summary, summaryBody);
      if (input.requiredGain !== null && stats.tokensBefore - stats.tokensAfter < input.requiredGain) {
        // SPEC §19 minimum gain (and §11.3 for hygiene): a result that does not save enough is not committed.
        await updateCompaction(db, input.tenantId, input.compactionId, {
          status: 'rejected',
          stats: JSON.stringify(stats),
          failure_class: failureClass,
          completed_at: new Date(),
        });
        windowCache?.delete(input.tenantId, input.compactionId);
        return {
          status: 'rejected',
          sessionId: record.session_id,
          stats: contentFreeStats(stats),
          totals: null,
          similarity,
        };
      }
      const summaryIndex = findSummaryIndex(output, summaryBody);
      if (failureClass !== null) {
        await updateCompaction(db, input.tenantId, input.compactionId, {
          failure_class: failureClass,
          summary_backend: 'fallback',
        });
      }
      const commit = {
        compactionId: input.compactionId,
        expectedRowIds: plan.inputRowIds,
        inputMessages: messages,
        output,
        summaryIndex,
        summaryBody,
        fallbackUsed,
        // activeMessages rides along so that a retry after the commit can report it (committedResult).
        stats: { ...stats, activeMessages: output.length },
        platform: input.platform,
      };
      const committed = await commitCompaction(db, input.tenantId, record, commit, input.newSessionId);
      windowCache?.delete(input.tenantId, input.compactionId);
      return {
        status: fallbackUsed ? 'fallback' : 'committed',
        sessionId: committed.sessionId,
        stats: contentFreeStats(stats),
        retention: retentionOf(record),
        totals: committed.totals,
        similarity,
      };
    },

    /** Records how a compaction ended when no commit happened (abort, failure after retries). */
    async recordCompactionEnd(input: CompactionEnd): Promise<void> {
      windowCache?.delete(input.tenantId, input.compactionId);
      const record = await requireRecord(db, input);
      if (isCommitted(record)) return;
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
