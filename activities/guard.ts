// One wrapper around every activity of the worker (issue #9 §1, §3 and §5):
// - it heartbeats while an activity task runs, so a task lost with a killed worker is retried within the heartbeat
//   timeout (workflows/activityOptions.ts) instead of its start-to-close timeout (local activities: no heartbeat);
// - it hands a provider call's LlmFailure (infra/llm/errors.ts) to Temporal as an ApplicationFailure of its type,
//   retryability and retry delay;
// - it turns errors no retry can fix into non-retryable ApplicationFailures with a type from contracts/failures.ts:
//   the store's domain errors, PostgreSQL errors of the "can never succeed" classes (data exception, constraint,
//   limit), configuration errors and programming errors. A retryable error is one a later attempt may not see
//   (connection lost, serialization failure, provider 429). Without this, a poison batch retried forever and
//   wedged its conversation.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { FailureType } from '../contracts/failures.js';
import { ConfigError } from '../engine/index.js';
import { classifyDbError, refusedWriteMessage } from '../infra/db/dbErrors.js';
import {
  CompactionNotFoundError,
  CompactionNotReplayableError,
  ConversationNotFoundError,
  IdempotencyConflictError,
  SessionNotFoundError,
  TranscriptChangedError,
} from '../infra/db/storeErrors.js';
import { LlmFailure } from '../infra/llm/errors.js';

/** The failure type of an error no retry can fix, or null when a retry may succeed. */
function permanentType(err: unknown): string | null {
  if (err instanceof TranscriptChangedError) return FailureType.TranscriptChanged;
  if (err instanceof SessionNotFoundError) return FailureType.UnknownSession;
  if (err instanceof ConversationNotFoundError) return FailureType.UnknownConversation;
  if (err instanceof CompactionNotFoundError) return FailureType.NotFound;
  if (err instanceof CompactionNotReplayableError) return FailureType.NotReplayable;
  if (err instanceof IdempotencyConflictError) return FailureType.IdempotencyConflict;
  if (err instanceof ConfigError) return 'InvalidConfiguration';
  if (classifyDbError(err) === 'permanent') return FailureType.StoreRefused;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError) return 'InternalError';
  return null;
}

/** `err` as the activity's failure: a provider's classified failure as is, non-retryable when no retry can fix it. */
export function activityFailure(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof LlmFailure) {
    return ApplicationFailure.create({
      message: err.message,
      type: err.type,
      nonRetryable: err.nonRetryable,
      details: [err.details],
      ...(err.nextRetryDelay !== undefined ? { nextRetryDelay: err.nextRetryDelay } : {}),
    });
  }
  const type = permanentType(err);
  if (type === null) return err;
  // A refused write is reported without PostgreSQL's message, which may quote the data (message content).
  const message = type === FailureType.StoreRefused ? refusedWriteMessage(err) : (err as Error).message;
  return ApplicationFailure.create({
    message,
    type,
    nonRetryable: true,
    cause: err instanceof Error ? err : undefined,
  });
}

function currentContext(): Context | null {
  try {
    return Context.current();
  } catch {
    return null;
  }
}

/**
 * Wraps every activity: heartbeats every `heartbeatIntervalMs` while it runs (a task, not a local activity), and
 * classifies its errors.
 */
export function guardActivities<T extends Record<string, (...args: any[]) => Promise<unknown>>>(
  activities: T,
  options: { heartbeatIntervalMs?: number } = {},
): T {
  const interval = options.heartbeatIntervalMs ?? 1_000;
  const guarded: Record<string, (...args: any[]) => Promise<unknown>> = {};
  for (const [name, fn] of Object.entries(activities)) {
    guarded[name] = async (...args: any[]) => {
      // A local activity has no heartbeat (its workflow task is its lease): the server would refuse each one.
      const found = currentContext();
      const context = found && !found.info.isLocal ? found : null;
      context?.heartbeat();
      const timer = context ? setInterval(() => context.heartbeat(), interval) : null;
      try {
        return await fn(...args);
      } catch (err) {
        throw activityFailure(err);
      } finally {
        if (timer) clearInterval(timer);
      }
    };
  }
  return guarded as T;
}
