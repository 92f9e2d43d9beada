// The compaction record and phase 2 (SPEC §8.1: boundaries are computed on the unpruned input, so align runs first).
import type { StoredPlan } from '../../contracts/compaction.js';
import type { AlignInput, AlignResult, BeginCompactionInput } from '../../contracts/compactionActivities.js';
import {
  buildSummaryRequest,
  estimateMessagesTokensRough,
  planCompaction,
  unchangedStats,
} from '../../engine/index.js';
import { type CompactionPatch, createCompactionRecord, updateCompaction } from '../../infra/db/compactions.js';
import { loadTranscript, selectPreviousSummary } from '../../infra/db/messages.js';
import { withTenant } from '../../infra/db/tenant.js';
import { type CompactionActivityDeps, requireRecord } from './record.js';

export function createAlignActivities({ db }: Pick<CompactionActivityDeps, 'db'>) {
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
        previousSummary:
          input.previousSummary !== undefined
            ? input.previousSummary
            : await withTenant(db, input.tenantId, (tx) => selectPreviousSummary(tx, input.tenantId, input.sessionId)),
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
      const patch: CompactionPatch = { plan: JSON.stringify(plan) };
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
  };
}
