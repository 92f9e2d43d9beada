// Replays one failed compaction (SPEC §13.7): regenerate its summary from the stored record with the current
// summarizer; when it is still the latest compaction of its session the new summary replaces the fallback in the
// live transcript and the conversation's engine takes it as previousSummary; otherwise it is only recorded.
import {
  ActivityFailure,
  getExternalWorkflowHandle,
  patched,
  proxyActivities,
  setCurrentDetails,
} from '@temporalio/workflow';
import type { ReplayActivities } from '../activities/compaction/index.js';
import type { ReplayInput, ReplayResult } from '../contracts/compactionActivities.js';
import { DEFAULT_COMPACTION_TIMEOUTS, replayStoreActivityOptions, summaryActivityOptions } from './activityOptions.js';
import { summaryReplacedSignal } from './definitions.js';
import { conversationWorkflowId } from './ids.js';

/** Patch id of the content-free replay (issue #11 §1): histories recorded before it replay the old path below. */
const CLAIM_CHECK_PATCH = 'replay-claim-check';

function failureText(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

/**
 * The summary is written and applied by one activity: the new body never enters this history. The conversation
 * needs no signal: its next compaction reads the previous summary from the log (SPEC §13.4).
 */
async function replayWithinTheStore(
  input: ReplayInput,
  sessionId: string,
  summary: ReturnType<typeof proxyActivities<ReplayActivities>>,
): Promise<ReplayResult> {
  const ref = { tenantId: input.tenantId, compactionId: input.compactionId };
  try {
    const applied = await summary.replaySummary(ref);
    setCurrentDetails(applied.applied ? 'Replayed summary is live' : `Replayed summary recorded (${applied.reason})`);
    const status = applied.applied ? 'replaced' : 'recorded';
    return { compactionId: input.compactionId, status, reason: applied.reason, summaryBody: null, error: null };
  } catch (err) {
    const error = failureText(err);
    setCurrentDetails(`Replay of session ${sessionId} failed: ${error}; nothing changed`);
    return { compactionId: input.compactionId, status: 'failed', reason: null, summaryBody: null, error };
  }
}

export async function replayCompactionWorkflow(input: ReplayInput): Promise<ReplayResult> {
  const t = { ...DEFAULT_COMPACTION_TIMEOUTS, ...input.timeouts };
  const store = proxyActivities<ReplayActivities>(replayStoreActivityOptions(t));
  const summary = proxyActivities<ReplayActivities>(summaryActivityOptions(t));
  const ref = { tenantId: input.tenantId, compactionId: input.compactionId };
  const target = await store.describeReplay(ref);
  setCurrentDetails(`Replaying compaction ${input.compactionId} (${target.status}) of session ${target.sessionId}`);
  if (patched(CLAIM_CHECK_PATCH)) return replayWithinTheStore(input, target.sessionId, summary);
  let body: string;
  try {
    body = await summary.replaySummarize(ref);
  } catch (err) {
    const error = failureText(err);
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
