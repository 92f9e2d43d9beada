// Replay of a compaction that used the fallback summary (SPEC §13.7, issue: operators replaying failed compactions):
// regenerate the summary from the stored record — same window, same previous summary, same focus topic — with the
// current summarizer, then swap it in when the compaction is still the latest of its session, else only record it.
// Only `fallback` compactions are replayable: an aborted or failed one committed nothing, so there is no summary to
// replace (the gateway refuses those with 409 before anything runs; this is the same rule, non-retryable).
import { ApplicationFailure } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import { REPLAYABLE_STATUSES } from '../contracts/compaction.js';
import { FailureType } from '../contracts/failures.js';
import { toStorableText } from '../contracts/storableText.js';
import { buildSummaryRequest, interpretSummaryReply, summaryText } from '../engine/index.js';
import { replaceReplayedSummary } from '../infra/db/compactionCommit/index.js';
import { getCompaction } from '../infra/db/compactions.js';
import type { Database } from '../infra/db/schema.js';
import { type CompactionActivityDeps, type CompactionRef, summarizerForSession } from './compaction.js';
import { applyPrune, loadSnapshot } from './compactionSnapshot.js';

/** Why a compaction with this status cannot be replayed, or null when it can (SPEC §13.7). */
export function notReplayableReason(record: { id: string; status: string; conversation_id: string }): string | null {
  if ((REPLAYABLE_STATUSES as readonly string[]).includes(record.status)) return null;
  if (record.status === 'aborted' || record.status === 'failed' || record.status === 'rejected') {
    return (
      `compaction ${record.id} ended '${record.status}': nothing was committed, so there is no summary to replace. ` +
      `To compact the live transcript now, POST /v1/conversations/${record.conversation_id}/compact.`
    );
  }
  return `compaction ${record.id} has status '${record.status}'; only compactions that used the fallback summary can be replayed`;
}

export interface ReplayTarget {
  conversationId: string;
  sessionId: string;
  status: string;
}

export interface ApplyReplayResult {
  applied: boolean;
  reason: string | null;
  conversationId: string;
}

async function replayable(db: Kysely<Database>, ref: CompactionRef) {
  const record = await getCompaction(db, ref.tenantId, ref.compactionId);
  if (!record) {
    throw ApplicationFailure.nonRetryable(`compaction ${ref.compactionId} not found`, FailureType.NotFound);
  }
  const reason = notReplayableReason(record);
  if (reason) throw ApplicationFailure.nonRetryable(reason, FailureType.NotReplayable);
  if (!record.plan || !record.prune_result) {
    throw ApplicationFailure.nonRetryable(
      `compaction ${ref.compactionId} stopped before its window was stored; there is nothing to replay`,
      FailureType.NotReplayable,
    );
  }
  return record;
}

export function createReplayActivities(deps: Pick<CompactionActivityDeps, 'db' | 'summarizer' | 'summarizerFor'>) {
  const { db } = deps;
  return {
    async describeReplay(ref: CompactionRef): Promise<ReplayTarget> {
      const record = await replayable(db, ref);
      return { conversationId: record.conversation_id, sessionId: record.session_id, status: record.status };
    },

    /** One summarizer attempt on the stored window; rejects on failure (retried by the workflow's policy). */
    async replaySummarize(ref: CompactionRef): Promise<string> {
      const record = await replayable(db, ref);
      const summarizer = await summarizerForSession(deps, ref.tenantId, record.session_id);
      if (!summarizer) {
        throw ApplicationFailure.nonRetryable(
          'no summary provider is configured; replay needs one',
          FailureType.NoSummarizer,
        );
      }
      const snapshot = await loadSnapshot(db, ref.tenantId, record);
      const pruned = applyPrune(snapshot.input, record.prune_result!);
      const built = buildSummaryRequest(pruned, snapshot.plan, {
        previousSummary: record.previous_summary,
        focusTopic: record.focus_topic,
        contextLength: snapshot.plan.contextLength,
      });
      if (built.noop !== false) {
        throw ApplicationFailure.nonRetryable('window has no turns to summarise', FailureType.NoWindow);
      }
      const outcome = interpretSummaryReply(await summarizer(built.request));
      if (!outcome.ok) throw ApplicationFailure.nonRetryable('summary reply was empty', FailureType.EmptySummary);
      return toStorableText(outcome.body);
    },

    async applyReplay(ref: CompactionRef & { summaryBody: string }): Promise<ApplyReplayResult> {
      const record = await replayable(db, ref);
      const result = await replaceReplayedSummary(db, ref.tenantId, {
        compactionId: ref.compactionId,
        newSummaryText: summaryText(ref.summaryBody),
        newSummaryBody: ref.summaryBody,
      });
      return { applied: result.applied, reason: result.reason ?? null, conversationId: record.conversation_id };
    },
  };
}

export type ReplayActivities = ReturnType<typeof createReplayActivities>;
