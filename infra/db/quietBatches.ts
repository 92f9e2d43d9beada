// Quiet batches in the conversation log (migration 0009, engine/quietBatches.ts; issue #11 §2). Inside the append's
// transaction, with the conversation row locked, a committed batch is judged against the rules the workflow
// published, and the verdict is written by the append's own statement on the row: a quiet batch is folded into the
// row and counted as applied at once (no notification); any other opens a new notification epoch and carries the
// fold. Manual compactions and model switches carry it the same way. The fold stays in the row until the workflow's
// publication covers it (recordApplied), so a notification that never arrives loses nothing: the next one carries
// the fold again (the workflow applies a fold once).
import { type Kysely, sql, type UpdateObject } from 'kysely';
import type { NotificationFold, StoredBatch } from '../../contracts/conversationLog.js';
import { notifiedAfter, type RulesStanding, turnRunsWithoutWorkflow } from '../../engine/gatewayTurns.js';
import { foldQuiet, isQuiet } from '../../engine/quietBatches.js';
import { requireLockedConversation } from './conversationHead.js';
import type { ConversationRow, Database } from './schema.js';
import { withTenantWrite } from './writeRetry.js';

/**
 * Whether the workflow must hear of a batch, and what the notification carries then. `turnUnwaited`: the chat turn
 * that follows the batch may run in the gateway once the workflow is notified (engine turnRunsWithoutWorkflow).
 */
export type NotifyDecision =
  | { notify: false }
  | { notify: true; notification: NotificationFold | null; turnUnwaited?: boolean };

/** Opens a new notification epoch (set with the append's totals, or on its own); the notification carries the fold. */
const NEXT_EPOCH = { notify_epoch: sql<number>`notify_epoch + 1` };
/**
 * A new epoch whose notification the gateway does not judge (a manual compaction, a model switch, a transcript swap,
 * a policy change): what was notified since the rules is unknown until the workflow publishes again.
 */
const VOID_RULES = { ...NEXT_EPOCH, notified_since: null };

/**
 * Decides on a batch appended to the locked conversation `head` (its row as locked, before the append), and says
 * which columns of that row the append's statement sets with it. `loud`: the workflow hears of the batch whatever
 * the rules say (a chat turn it runs). `turnFollows`: the gateway runs a chat turn after the batch if it is quiet.
 */
export function decideNotification(
  head: ConversationRow,
  batch: StoredBatch,
  options: { loud?: boolean; turnFollows?: boolean } = {},
): { decision: NotifyDecision; set: UpdateObject<Database, 'conversations'> | null } {
  if (batch.seq === null && !options.loud) {
    // Every message was stored before: notify again only while something accepted is still undecided (its own
    // notification may have been lost); the fold stays for the next notification.
    const decision: NotifyDecision =
      head.applied_seq < batch.latestSeq ? { notify: true, notification: null } : { notify: false };
    return { decision, set: null };
  }
  const rules = head.quiet_rules;
  const fold = head.quiet_fold;
  const turnFollows = options.turnFollows === true;
  const standing = standingOf(head, batch.seq);
  const { current } = standing;
  if (options.loud || !current || rules === null || !isQuiet(rules, fold, batch, { turnFollows })) {
    const notification = { epoch: head.notify_epoch + 1, quiet: fold };
    const unwaited =
      !options.loud && turnFollows && rules !== null && turnRunsWithoutWorkflow(rules, fold, batch, standing);
    const since = options.loud ? null : notifiedAfter(rules, fold, batch, standing);
    return {
      decision: { notify: true, notification, ...(unwaited ? { turnUnwaited: true } : {}) },
      set: { ...NEXT_EPOCH, notified_since: since ? JSON.stringify(since) : null },
    };
  }
  return {
    decision: { notify: false },
    set: { quiet_fold: JSON.stringify(foldQuiet(head.quiet_fold, batch)), applied_seq: batch.seq as number },
  };
}

/**
 * Where the conversation's row stands for batch `seq`: its rules are current (the workflow's latest, and it has
 * decided on every batch before), or what was notified since them is what the row knows.
 */
export function standingOf(head: ConversationRow, seq: number | null): RulesStanding {
  const rules = head.quiet_rules;
  const current = seq !== null && rules !== null && rules.epoch === head.notify_epoch && head.applied_seq === seq - 1;
  return current ? { current } : { current, since: head.notified_since };
}

/**
 * Before a manual compaction or a model switch: a new epoch, and the quiet batches to apply before it; with the
 * conversation's row as it was locked.
 */
export function openNotification(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<{ notification: NotificationFold; head: ConversationRow }> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const head = await requireLockedConversation(tx, tenantId, conversationId);
    await tx
      .updateTable('conversations')
      .set(VOID_RULES)
      .where('tenant_id', '=', tenantId)
      .where('id', '=', head.id)
      .execute();
    return { notification: { epoch: head.notify_epoch + 1, quiet: head.quiet_fold }, head };
  });
}
