// Every activity option set of the workflows, in one place (DESIGN.md §3). Recovery after a worker crash (issue #9
// §5): every activity heartbeats while it runs (activities/guard.ts), so a task lost with a killed worker is retried
// within HEARTBEAT_TIMEOUT instead of its start-to-close timeout; start-to-close stays a generous upper bound.
// Errors no retry can fix are non-retryable ApplicationFailures raised by the activities themselves.
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import type { CompactionTimeouts } from '../contracts/compaction.js';
import { FailureType } from '../contracts/failures.js';

/** How long the server waits for a heartbeat before it retries the activity elsewhere. */
export const HEARTBEAT_TIMEOUT_SECONDS = 3;

export const DEFAULT_COMPACTION_TIMEOUTS: CompactionTimeouts = {
  phaseSeconds: 60,
  summaryAttemptSeconds: 120,
  summaryCeilingSeconds: 600,
  summaryHeartbeatSeconds: HEARTBEAT_TIMEOUT_SECONDS,
};

/**
 * Store activities of the conversation workflow retry until PostgreSQL answers again (no attempt limit): a
 * conversation never fails because the database was briefly away.
 */
export const storeActivityOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: `${HEARTBEAT_TIMEOUT_SECONDS} seconds`,
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
};

/**
 * The state publication (`recordState`, one short write) as a local activity: it runs inside the workflow task
 * that decided, so a publication costs no task round trip through the server. A worker that dies during it loses
 * the workflow task, which the server hands to another worker after its timeout; the write is idempotent.
 */
export const localStoreActivityOptions: LocalActivityOptions = {
  startToCloseTimeout: storeActivityOptions.startToCloseTimeout,
  retry: storeActivityOptions.retry,
};

/**
 * The agent turn: transient provider errors retry (429 honours retry-after through nextRetryDelay); permanent ones
 * (auth, bad request, context too long) are non-retryable and reach the client as the update's error.
 */
export const modelActivityOptions: ActivityOptions = {
  startToCloseTimeout: '6 minutes',
  heartbeatTimeout: `${HEARTBEAT_TIMEOUT_SECONDS} seconds`,
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 5 },
};

/**
 * The agent turn as a local activity (patch `local-respond`): the model call runs inside the workflow task that
 * took the turn, so a turn costs one workflow task instead of two plus an activity task through the server. A long
 * model call keeps that task alive by heartbeating it (the SDK does); a worker that dies during it loses the task,
 * which the server hands to another worker after its timeout, and the retried call finds the stored turn (idempotent
 * by turn id) or calls the model again. Same timeout and retries as the activity task.
 */
export const localModelActivityOptions: LocalActivityOptions = {
  startToCloseTimeout: modelActivityOptions.startToCloseTimeout,
  retry: modelActivityOptions.retry,
};

/** Compaction phases (align, prune, reassemble and the record writes): bounded retries. */
export function phaseActivityOptions(t: CompactionTimeouts): ActivityOptions {
  return {
    startToCloseTimeout: `${t.phaseSeconds} seconds`,
    heartbeatTimeout: `${t.summaryHeartbeatSeconds} seconds`,
    retry: {
      initialInterval: '200 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: '5 seconds',
      maximumAttempts: 8,
    },
  };
}

/** SPEC §9.2: at most 3 summarizer attempts, each bounded, all within the ceiling. */
export function summaryActivityOptions(t: CompactionTimeouts): ActivityOptions {
  return {
    startToCloseTimeout: `${t.summaryAttemptSeconds} seconds`,
    scheduleToCloseTimeout: `${t.summaryCeilingSeconds} seconds`,
    heartbeatTimeout: `${t.summaryHeartbeatSeconds} seconds`,
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
  };
}

/** The replay's record reads and writes (SPEC §13.7): bounded retries; a missing or non-replayable record is final. */
export function replayStoreActivityOptions(t: CompactionTimeouts): ActivityOptions {
  return {
    startToCloseTimeout: `${t.phaseSeconds} seconds`,
    retry: {
      initialInterval: '200 milliseconds',
      maximumInterval: '5 seconds',
      maximumAttempts: 8,
      nonRetryableErrorTypes: [FailureType.NotFound, FailureType.NotReplayable],
    },
  };
}
