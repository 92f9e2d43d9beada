// Phase 3 (S6, SPEC §8.5): one summarizer attempt per activity attempt; the retry policy lives in the workflow
// (SPEC §9.2). Rejects on failure — an empty reply is non-retryable — and never stores error text as a summary.
import { Context } from '@temporalio/activity';
import type { CompactionRef, SummarizeResult } from '../../contracts/compactionActivities.js';
import { toStorableText } from '../../contracts/storableText.js';
import { updateCompaction } from '../../infra/db/compactions.js';
import { summarizeNatively } from './nativeSummary.js';
import {
  type CompactionActivityDeps,
  loadSnapshot,
  prunedSnapshot,
  requireRecord,
  summarizerForSession,
} from './record.js';
import { extractiveBody, hostPolicyForTenant } from './summaryBackend.js';
import { type GatedSummary, summarizeWindow } from './summaryCall.js';

export function createSummarizeActivities(deps: CompactionActivityDeps) {
  const { db } = deps;
  return {
    async summarize(ref: CompactionRef): Promise<SummarizeResult> {
      const record = await requireRecord(db, ref);
      if (record.summary_body) return { ok: true, summarizerCalled: record.summary_backend !== 'extractive' };
      const policy = await hostPolicyForTenant(deps, ref.tenantId);
      if (policy.summaryBackend === 'anthropic_native') {
        // SPEC §19: Anthropic's compaction block where the route supports it; else the local summariser below.
        const native = await summarizeNatively(deps, ref, record);
        if (native === 'committed') return { ok: true, summarizerCalled: true };
        if (record.native_fallback !== native) {
          await updateCompaction(db, ref.tenantId, ref.compactionId, { native_fallback: native });
        }
      }
      const summarizer =
        policy.summaryBackend === 'extractive'
          ? null
          : await summarizerForSession(deps, ref.tenantId, record.session_id);
      if (!summarizer) {
        // SPEC §19 `summary_backend: extractive`, and `local` with no provider configured: no LLM; the deterministic
        // body is the summary (committed, not the §9.5 fallback, which stays the answer to a failing summariser).
        const snapshot = await loadSnapshot(deps, ref.tenantId, record);
        await updateCompaction(db, ref.tenantId, ref.compactionId, {
          summary_body: toStorableText(extractiveBody(snapshot)),
          summary_backend: 'extractive',
          failure_class: null,
          error: null,
        });
        return { ok: true, summarizerCalled: false };
      }
      const snapshot = await prunedSnapshot(deps, ref.tenantId, record);
      const { info, cancellationSignal } = Context.current();
      await updateCompaction(db, ref.tenantId, ref.compactionId, { attempts: info.attempt });
      let gated: GatedSummary;
      try {
        // Cancelled (its worker stopping past WORKER_SHUTDOWN_GRACE_SECONDS, the compaction cancelled): the model call
        // stops at once, and the attempt fails to be retried, instead of holding the worker until the call ends.
        gated = await summarizeWindow(summarizer, record, snapshot, cancellationSignal);
      } catch (err) {
        // Why this attempt failed, for the operator (a provider's message names provider, model and status only).
        const message = err instanceof Error ? err.message : String(err);
        await updateCompaction(db, ref.tenantId, ref.compactionId, { error: toStorableText(message.slice(0, 2_000)) });
        throw err;
      }
      // The quality gate's retention shares (issue #15 §3): on the compaction record and in /metrics.
      deps.metrics?.summaryRetention.observe({ stage: 'before' }, gated.retentionBefore);
      deps.metrics?.summaryRetention.observe({ stage: 'after' }, gated.retentionAfter);
      await updateCompaction(db, ref.tenantId, ref.compactionId, {
        summary_body: gated.body,
        summary_backend: 'llm',
        retention_before: gated.retentionBefore,
        retention_after: gated.retentionAfter,
        failure_class: null,
        error: null,
      });
      return { ok: true, summarizerCalled: true };
    },
  };
}
