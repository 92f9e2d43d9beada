// Replays one failed compaction (SPEC §13.7): regenerate its summary from the stored record with the current
// summarizer; when it is still the latest compaction of its session the new summary replaces the fallback in the
// live transcript and the conversation's engine takes it as previousSummary; otherwise it is only recorded.
import { ActivityFailure, getExternalWorkflowHandle, proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ReplayActivities } from '../activities/compaction/index.js';
import type { ReplayInput, ReplayResult } from '../contracts/compactionActivities.js';
import { DEFAULT_COMPACTION_TIMEOUTS, replayStoreActivityOptions, summaryActivityOptions } from './activityOptions.js';
import { summaryReplacedSignal } from './definitions.js';
import { conversationWorkflowId } from './ids.js';

export async function replayCompactionWorkflow(input: ReplayInput): Promise<ReplayResult> {
  const t = { ...DEFAULT_COMPACTION_TIMEOUTS, ...input.timeouts };
  const store = proxyActivities<ReplayActivities>(replayStoreActivityOptions(t));
  const summary = proxyActivities<ReplayActivities>(summaryActivityOptions(t));
  const ref = { tenantId: input.tenantId, compactionId: input.compactionId };
  const target = await store.describeReplay(ref);
  setCurrentDetails(`Replaying compaction ${input.compactionId} (${target.status}) of session ${target.sessionId}`);
  let body: string;
  try {
    body = await summary.replaySummarize(ref);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const error = cause instanceof Error ? cause.message : String(cause);
    setCurrentDetails(`Replay failed: ${error}; nothing changed`);
    return { compactionId: input.compactionId, status: 'failed', reason: null, summaryBody: null, error };
  }
  const applied = await store.applyReplay({ ...ref, summaryBody: body });
  if (applied.applied) {
    try {
      await getExternalWorkflowHandle(conversationWorkflowId(input.tenantId, applied.conversationId)).signal(
        summaryReplacedSignal,
        { compactionId: input.compactionId, summaryBody: body },
      );
    } catch {
      // The conversation is not running: its next start restores previousSummary from the store (§13.4).
    }
  }
  setCurrentDetails(applied.applied ? 'Replayed summary is live' : `Replayed summary recorded (${applied.reason})`);
  return {
    compactionId: input.compactionId,
    status: applied.applied ? 'replaced' : 'recorded',
    reason: applied.reason,
    summaryBody: body,
    error: null,
  };
}
