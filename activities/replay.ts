// Replay of a failed compaction (SPEC §13.7, issue: operators replaying failed compactions): regenerate the summary
// from the stored record — same window, same previous summary, same focus topic — with the current summarizer, then
// swap it in when the compaction is still the latest of its session, else only record it.
import { ApplicationFailure, heartbeat } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import { buildSummaryRequest, interpretSummaryReply, summaryText } from '../engine/index.js';
import { replaceReplayedSummary } from '../infra/db/compactionCommit.js';
import { getCompaction } from '../infra/db/compactions.js';
import type { Database } from '../infra/db/schema.js';
import {
  type CompactionActivityDeps,
  type CompactionRef,
  EMPTY_SUMMARY_FAILURE,
  summarizerForSession,
} from './compaction.js';
import { applyPrune, loadSnapshot, storedPrune } from './compactionSnapshot.js';

export const REPLAYABLE_STATUSES = ['fallback', 'failed', 'aborted'] as const;

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
  if (!record) throw ApplicationFailure.nonRetryable(`compaction ${ref.compactionId} not found`, 'NotFound');
  if (!(REPLAYABLE_STATUSES as readonly string[]).includes(record.status)) {
    throw ApplicationFailure.nonRetryable(
      `compaction ${ref.compactionId} has status '${record.status}'; only ${REPLAYABLE_STATUSES.join(', ')} can be replayed`,
      'NotReplayable',
    );
  }
  if (!record.plan || !storedPrune(record)) {
    throw ApplicationFailure.nonRetryable(
      `compaction ${ref.compactionId} stopped before its window was stored; there is nothing to replay`,
      'NotReplayable',
    );
  }
  return record;
}

export function createReplayActivities(
  deps: Pick<CompactionActivityDeps, 'db' | 'summarizer' | 'heartbeatIntervalMs'>,
) {
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
        throw ApplicationFailure.nonRetryable('no summary provider is configured; replay needs one', 'NoSummarizer');
      }
      const snapshot = await loadSnapshot(db, ref.tenantId, record);
      const pruned = applyPrune(snapshot.input, storedPrune(record)!);
      const built = buildSummaryRequest(pruned, snapshot.plan, {
        previousSummary: record.previous_summary,
        focusTopic: record.focus_topic,
        contextLength: snapshot.plan.contextLength,
      });
      if (built.noop !== false) throw ApplicationFailure.nonRetryable('window has no turns to summarise', 'NoWindow');
      const interval = setInterval(() => heartbeat(), deps.heartbeatIntervalMs ?? 5_000);
      let reply: unknown;
      try {
        reply = await summarizer(built.request);
      } finally {
        clearInterval(interval);
      }
      const outcome = interpretSummaryReply(reply);
      if (!outcome.ok) throw ApplicationFailure.nonRetryable('summary reply was empty', EMPTY_SUMMARY_FAILURE);
      return outcome.body;
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
