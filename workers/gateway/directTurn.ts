// A chat turn run in the gateway (chatTurns.ts, issue #11 §2): the model call on the transcript read with the user
// batch, then the reply stored with its turn record in one transaction and its batch judged by the workflow's
// published rules — quiet (folded, a cache recovery it completes recorded at once) or notified. A transient model
// failure hands the turn back to the caller (the workflow runs it with its durable retries); a permanent one
// answers at once, as it would there.
import type { TurnCall, TurnRunner } from '../../activities/turnRunner.js';
import type { CacheRecovery, TurnOutcome } from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import type { ChatMessage } from '../../engine/index.js';
import { foldQuiet } from '../../engine/index.js';
import { isDatabaseOutage } from '../../infra/db/dbErrors.js';
import { toStoredMessage } from '../../infra/db/messageRows.js';
import type { StoredMessage } from '../../infra/db/messages.js';
import { decideNotification, type NotifyDecision } from '../../infra/db/quietBatches.js';
import type { ConversationRow } from '../../infra/db/schema.js';
import { isTransientFailure } from '../../infra/llm/errors.js';
import type { OnText } from '../../infra/llm/streamedCall.js';
import type { ChatTool } from '../../infra/llm/types.js';
import { recoveryCompletedBy } from '../../workflows/conversation/cacheTelemetry.js';
import { HttpError } from './errors.js';
import { storedBatchOf } from './logView.js';

/** A turn's outcome, and its answer when this gateway stored the reply itself (no read needed). */
export interface RunOutcome {
  outcome: TurnOutcome;
  answered?: { head: ConversationRow; reply: ChatMessage };
  /** The reply's batch was notified (it was not quiet). */
  notified?: boolean;
}

export interface DirectTurn {
  tenantId: string;
  conversationId: string;
  turnId: string;
  /** The conversation's row as the user batch's append locked it (the workflow's published state). */
  head: ConversationRow;
  /** The active transcript read in the user batch's transaction, user batch included, and its version. */
  rows: readonly StoredMessage[];
  readVersion: number;
  tools?: ChatTool[];
  /** Streams the model call: each piece of the reply's text as it arrives. */
  onText?: OnText;
}

/**
 * The provider a turn of the conversation runs with: the one the workflow published (a model switch changes it),
 * else, before the workflow published anything, the one the conversation was created with.
 */
export function turnProvider(head: ConversationRow): string | null {
  return head.state ? head.state.provider : head.provider;
}

/** Tells the workflow of the turn's reply batch when that is not quiet. */
export type NotifyBatch = (reply: StoredBatch) => Promise<void>;

/**
 * Runs the turn; null when the model failed transiently (the caller hands the turn to the workflow). A reply some
 * other attempt stored first is that attempt's outcome.
 */
export async function runDirectTurn(
  runner: TurnRunner,
  turn: DirectTurn,
  notify: NotifyBatch,
): Promise<RunOutcome | null> {
  const published = turn.head.state;
  const input = {
    tenantId: turn.tenantId,
    conversationId: turn.conversationId,
    sessionId: turn.head.current_session_id,
    // The model the workflow decides with (a switch is published before the rules allow a turn here again).
    model: published?.model ?? turn.head.model,
    provider: turnProvider(turn.head),
    turnKey: turn.turnId,
    tools: turn.tools ?? null,
    // The compaction whose cache recovery the workflow measures, as it published it (the turn record's telemetry).
    afterCompactionId: published?.cache?.watching?.compactionId ?? null,
    // SPEC §15.1 as the workflow published it (absent in a status written before native compaction existed).
    nativeCompactThreshold: published?.nativeCompactThreshold ?? turn.head.quiet_rules?.nativeCompactThreshold ?? null,
  };
  let call: TurnCall;
  try {
    // The rows are the transcript cache's (transcriptCache.ts): the same objects every turn, their JSON kept too.
    call = await runner.call(input, turn.rows, { keepJson: true, ...(turn.onText ? { onText: turn.onText } : {}) });
  } catch (err) {
    if (isTransientFailure(err)) return null;
    // The call reads and writes PostgreSQL too (a native route's request and checkpoint): an outage there is the
    // gateway's to answer (503 with Retry-After, errors.ts), not the model's verdict on the turn.
    if (isDatabaseOutage(err)) throw err;
    // As the workflow's turn fails for good (gateway/errors.ts maps its update failure the same way).
    throw new HttpError(422, err instanceof Error ? err.message : String(err));
  }
  let reply: StoredBatch | undefined;
  let decision: NotifyDecision = { notify: false };
  let recovery: CacheRecovery | null = null;
  const stored = await runner.store(input, call, (result, locked) => {
    const { usage } = call.result;
    // A native checkpoint's reading is no verdict (SPEC §15.1): the batch says so instead of carrying it.
    const checkpoint = call.replay
      ? { nativeCheckpoint: true, ...(call.nativeCovered ? { nativeCovered: call.nativeCovered } : {}) }
      : null;
    const reading = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
    };
    reply = {
      ...storedBatchOf(result, {
        messages: [{ message: call.result.message, idempotencyKey: turn.turnId }],
        ...(checkpoint ? {} : { usage: reading }),
      }),
      // Counted once: a reply another attempt stored first is that attempt's turn.
      ...(result.appended.length > 0 ? { turn: usage, readVersion: turn.readVersion, ...checkpoint } : {}),
    };
    const decided = decideNotification(locked, reply);
    decision = decided.decision;
    // A quiet reply that completes the cache-recovery measurement the workflow published: on the compaction's
    // record now (the workflow records the same when the fold reaches it, perhaps much later).
    // The fold is recomputed only while a measurement runs (decideNotification folded it for the row already).
    const published = locked.state?.cache;
    recovery =
      decided.decision.notify || !published?.watching
        ? null
        : recoveryCompletedBy(published, locked.quiet_fold, foldQuiet(locked.quiet_fold, reply));
    return decided.set;
  });
  const outcome = stored ? stored.result : await runner.storedTurn(input);
  if (!outcome) throw new Error(`turn ${turn.turnId}: the reply was stored by another attempt but its turn is missing`);
  const notifying = decision as NotifyDecision;
  if (reply && notifying.notify) {
    await notify(notifying.notification ? { ...reply, notification: notifying.notification } : reply);
  }
  const completed = recovery as CacheRecovery | null;
  if (stored && completed) {
    // Best effort: the reply is stored and answered either way; the workflow writes the same when the fold reaches it.
    await runner.recordCacheRecovery(turn.tenantId, completed).catch((err: unknown) => {
      console.warn(`cache recovery of ${completed.compactionId} not recorded yet: ${(err as Error).message}`);
    });
  }
  const result: TurnOutcome = {
    turnId: turn.turnId,
    replyMessageId: outcome.messageId,
    finishReason: outcome.finishReason,
    usage: outcome.usage,
    // A compaction the reply triggers runs in the background (the rules allow turns here only with SPEC §19
    // `background` on).
    compaction: null,
  };
  const written = stored?.appended.written;
  const notified = notifying.notify;
  return written
    ? { outcome: result, answered: { head: written, reply: toStoredMessage(call.result.message) }, notified }
    : { outcome: result, notified };
}
