// Phase 1 (S5, SPEC §8.4): dedup and clear old tool output on the working copy; stores only the changed rows.
import type { StoredPrune } from '../../contracts/compaction.js';
import type { CompactionRef } from '../../contracts/compactionActivities.js';
import { prunePhase } from '../../engine/index.js';
import { updateCompaction } from '../../infra/db/compactions.js';
import { loadSnapshot, requireRecord, type SnapshotDeps } from './record.js';

export function createPruneActivities(deps: SnapshotDeps) {
  const { db } = deps;
  return {
    async prune(ref: CompactionRef): Promise<{ prunedCount: number }> {
      const record = await requireRecord(db, ref);
      const existing = record.prune_result;
      if (existing) return { prunedCount: existing.prunedCount };
      const { input, plan } = await loadSnapshot(deps, ref.tenantId, record);
      const result = prunePhase(input, plan);
      const replacements: StoredPrune['replacements'] = [];
      result.messages.forEach((m, i) => {
        if (m !== input[i] && typeof m.content === 'string') replacements.push([i, m.content]);
      });
      const prune: StoredPrune = { prunedCount: result.prunedCount, replacements };
      await updateCompaction(db, ref.tenantId, ref.compactionId, { prune_result: JSON.stringify(prune) });
      return { prunedCount: prune.prunedCount };
    },
  };
}
