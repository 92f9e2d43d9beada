// Quiet batches in the conversation log (migration 0009, engine/quietBatches.ts; issue #11 §2). Inside the append's
// transaction, with the conversation row locked, a committed batch is judged against the rules the workflow
// published: a quiet one is folded into the row and counted as applied at once (no notification); any other opens a
// new notification epoch and carries the fold. Manual compactions and model switches carry it the same way. The fold
// stays in the row until the workflow's publication covers it (recordApplied), so a notification that never arrives
// loses nothing: the next one carries the fold again (the workflow applies a fold once).
import { type Kysely, sql } from 'kysely';
import type { NotificationFold, StoredBatch } from '../../contracts/conversationLog.js';
import { foldQuiet, isQuiet } from '../../engine/quietBatches.js';
import { requireLockedConversation } from './conversations.js';
import type { ConversationRow, Database } from './schema.js';
import type { TenantTx } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

/** Whether the workflow must hear of a batch, and what the notification carries then. */
export type NotifyDecision = { notify: false } | { notify: true; notification: NotificationFold | null };

/** Opens a new notification epoch on the locked row; the notification carries the fold. */
async function openEpoch(tx: TenantTx, tenantId: string, row: ConversationRow): Promise<NotificationFold> {
  const updated = await tx
    .updateTable('conversations')
    .set({ notify_epoch: sql`notify_epoch + 1` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', row.id)
    .returning('notify_epoch')
    .executeTakeFirstOrThrow();
  return { epoch: updated.notify_epoch, quiet: row.quiet_fold };
}

/**
 * Decides on a batch just appended to the locked conversation `head` (its row as locked, before the append).
 * `loud`: the batch goes to the workflow whatever the rules say (a chat turn).
 */
export async function settleNotification(
  tx: TenantTx,
  tenantId: string,
  head: ConversationRow,
  batch: StoredBatch,
  options: { loud?: boolean } = {},
): Promise<NotifyDecision> {
  if (batch.seq === null && !options.loud) {
    // Every message was stored before: notify again only while something accepted is still undecided (its own
    // notification may have been lost); the fold stays for the next notification.
    return head.applied_seq < batch.latestSeq ? { notify: true, notification: null } : { notify: false };
  }
  const rules = head.quiet_rules;
  const quiet =
    !options.loud &&
    batch.seq !== null &&
    rules !== null &&
    rules.epoch === head.notify_epoch &&
    head.applied_seq === batch.seq - 1 &&
    isQuiet(rules, head.quiet_fold, batch);
  if (!quiet) return { notify: true, notification: await openEpoch(tx, tenantId, head) };
  await tx
    .updateTable('conversations')
    .set({ quiet_fold: JSON.stringify(foldQuiet(head.quiet_fold, batch)), applied_seq: batch.seq as number })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', head.id)
    .execute();
  return { notify: false };
}

/** Before a manual compaction or a model switch: a new epoch, and the quiet batches to apply before it. */
export function openNotification(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<NotificationFold> {
  return withTenantWrite(db, tenantId, async (tx) =>
    openEpoch(tx, tenantId, await requireLockedConversation(tx, tenantId, conversationId)),
  );
}
