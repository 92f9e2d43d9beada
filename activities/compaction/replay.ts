// Replay of a compaction that used the fallback summary (SPEC §13.7, operators replaying failed compactions):
// regenerate the summary from the stored record — same window, same previous summary, same focus topic — with the
// current summarizer, then swap it in when the compaction is still the latest of its session, else only record it.
// Only `fallback` compactions are replayable: an aborted or failed one committed nothing, so there is no summary to
// replace (the gateway refuses those with 409 before anything runs, with the same rule: contracts/compaction.ts).
import { ApplicationFailure } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import {
  type ApplyReplayResult,
  type CompactionRef,
  notReplayableReason,
  type ReplayTarget,
} from '../../contracts/compactionActivities.js';
import { FailureType } from '../../contracts/failures.js';
import { summaryText } from '../../engine/index.js';
import { replaceReplayedSummary } from '../../infra/db/compactionCommit/index.js';
import { updateCompaction } from '../../infra/db/compactions.js';
import type { Database } from '../../infra/db/schema.js';
import { type CompactionActivityDeps, prunedSnapshot, requireRecord, summarizerForSession } from './record.js';
import { hostPolicyForTenant, withPolicyPointer } from './summaryBackend.js';
import { summarizeWindow } from './summaryCall.js';

async function replayable(db: Kysely<Database>, ref: CompactionRef) {
  const record = await requireRecord(db, ref);
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

/** The replay already applied to this record (an earlier attempt of replaySummary), as its result; else null. */
function earlierReplay(record: {
  stats: unknown;
  replayable: boolean;
  conversation_id: string;
}): ApplyReplayResult | null {
  const note = (record.stats as { replay?: { applied?: boolean; reason?: string } } | null)?.replay;
  if (record.replayable || !note) return null;
  return { applied: note.applied === true, reason: note.reason ?? null, conversationId: record.conversation_id };
}

export function createReplayActivities(deps: CompactionActivityDeps) {
  const { db } = deps;

  /** The new summary of the stored window, through the quality gate, with the archive pointer. */
  async function gatedReplaySummary(ref: CompactionRef) {
    const record = await replayable(db, ref);
    const summarizer = await summarizerForSession(deps, ref.tenantId, record.session_id);
    if (!summarizer) {
      throw ApplicationFailure.nonRetryable(
        'no summary provider is configured; replay needs one',
        FailureType.NoSummarizer,
      );
    }
    const gated = await summarizeWindow(summarizer, record, await prunedSnapshot(deps, ref.tenantId, record));
    const policy = await hostPolicyForTenant(deps, ref.tenantId);
    return { ...gated, body: withPolicyPointer(gated.body, policy, record.conversation_id) };
  }

  const activities = {
    async describeReplay(ref: CompactionRef): Promise<ReplayTarget> {
      const record = await replayable(db, ref);
      return { conversationId: record.conversation_id, sessionId: record.session_id, status: record.status };
    },

    /**
     * One summarizer attempt on the stored window; rejects on failure (retried by the workflow's policy). Kept for
     * replays recorded before the claim check; replaySummary does both steps.
     */
    async replaySummarize(ref: CompactionRef): Promise<string> {
      return (await gatedReplaySummary(ref)).body;
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

    /**
     * Summarises the stored window again and applies the new summary in one step, so that the body goes from the
     * summariser to PostgreSQL and never through Temporal (claim check, DESIGN.md §3). A retry after the apply finds
     * the replay recorded and reports it without a second summary.
     */
    async replaySummary(ref: CompactionRef): Promise<ApplyReplayResult> {
      const earlier = earlierReplay(await requireRecord(db, ref));
      if (earlier) return earlier;
      const gated = await gatedReplaySummary(ref);
      const applied = await activities.applyReplay({ ...ref, summaryBody: gated.body });
      if (applied.applied) {
        // The live summary is now an LLM one: its backend and the quality gate's shares (issue #15 §3).
        await updateCompaction(db, ref.tenantId, ref.compactionId, {
          summary_backend: 'llm',
          retention_before: gated.retentionBefore,
          retention_after: gated.retentionAfter,
        });
      }
      return applied;
    },
  };
  return activities;
}

export type ReplayActivities = ReturnType<typeof createReplayActivities>;
