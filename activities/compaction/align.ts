// The compaction record and phase 2 (SPEC §8.1: boundaries are computed on the unpruned input, so align runs first).
import type { StoredPlan } from '../../contracts/compaction.js';
import type { AlignInput, AlignResult, BeginCompactionInput } from '../../contracts/compactionActivities.js';
import { estimateMessagesTokensRough, planCompaction, unchangedStats } from '../../engine/index.js';
import { type CompactionPatch, createCompactionRecord, updateCompaction } from '../../infra/db/compactions.js';
import { loadTranscript, selectPreviousSummary } from '../../infra/db/messages.js';
import { withTenant } from '../../infra/db/tenant.js';
import { chooseEngine, type EngineDeps, logEngineFallback } from './engineChoice.js';
import { requireRecord, type SnapshotDeps } from './record.js';

export function createAlignActivities(deps: SnapshotDeps & EngineDeps) {
  const { db, windowCache } = deps;
  /** Creates the compaction record (idempotent: a retry finds it). */
  async function begin({ tenantId, compactionId, previousSummary, ...fields }: BeginCompactionInput) {
    return createCompactionRecord(db, tenantId, {
      ...fields,
      id: compactionId,
      previousSummary:
        previousSummary !== undefined
          ? previousSummary
          : await withTenant(db, tenantId, (tx) => selectPreviousSummary(tx, tenantId, fields.sessionId)),
    });
  }

  return {
    /** The record's creation as its own activity: histories recorded before `align-begins` (workflows/compaction.ts). */
    async beginCompaction(input: BeginCompactionInput): Promise<void> {
      await begin(input);
    },

    /**
     * Phase 2 (S1–S4, and the empty-window check of §8.5.1, which planCompaction makes) on the unpruned active
     * transcript; with `begin`, the compaction record is created first (idempotent), in the same activity. Before
     * planning, the tenant's `context.engine` is resolved (SPEC §10.3): an engine other than the built-in one that
     * this worker has is returned instead of a plan (engineCompress builds it and does that compaction); a name it
     * does not have leaves the §10.3 line on the record and in the result.
     */
    async align(input: AlignInput): Promise<AlignResult> {
      const record = input.begin
        ? await begin({ tenantId: input.tenantId, compactionId: input.compactionId, ...input.begin })
        : await requireRecord(db, input);
      const stored = record.plan;
      if (stored) {
        return {
          noop: stored.noop,
          headEnd: stored.headEnd,
          cut: stored.cut,
          inputRows: stored.inputRowIds.length,
          tokensBefore: stored.tokensBefore,
          // The line only (the record may add the engine's reason, which stays out of Temporal).
          engineWarning: input.engineFallback ?? record.engine_fallback,
        };
      }
      // engineCompress recorded its own fallback (with the reason); a line of this resolution is recorded here.
      let ownWarning: string | null = null;
      if (input.engineFallback === undefined && input.chooseEngine) {
        const choice = await chooseEngine(deps, input.tenantId);
        if (choice.engine !== null) {
          return { noop: false, headEnd: 0, cut: 0, inputRows: 0, tokensBefore: 0, engine: choice.engine };
        }
        ownWarning = choice.warning;
        if (ownWarning !== null) logEngineFallback(ownWarning, input);
      }
      const engineWarning = input.engineFallback ?? ownWarning;
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
      const noop = boundaries.noop;
      const plan: StoredPlan = {
        headEnd: boundaries.headEnd,
        cut: boundaries.cut,
        reinsertIndex: boundaries.reinsertIndex,
        noop,
        inputRowIds: rows.map((r) => r.id),
        tokensBefore,
        contextLength: input.contextLength,
      };
      const patch: CompactionPatch = {
        plan: JSON.stringify(plan),
        ...(ownWarning ? { engine_fallback: ownWarning } : {}),
      };
      if (noop !== false) {
        Object.assign(patch, {
          status: 'noop',
          stats: JSON.stringify(unchangedStats(tokensBefore, { noop: noop as never })),
          completed_at: new Date(),
        });
      }
      await updateCompaction(db, input.tenantId, input.compactionId, patch);
      // The later phases of this compaction on this worker take the input from memory (no second read).
      if (noop === false)
        windowCache?.put(input.tenantId, input.compactionId, plan.inputRowIds, messages, tokensBefore);
      return { noop, headEnd: plan.headEnd, cut: plan.cut, inputRows: rows.length, tokensBefore, engineWarning };
    },
  };
}
