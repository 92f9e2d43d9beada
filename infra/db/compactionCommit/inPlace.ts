// SPEC §13.2: the in-place commit — ONE transaction, retried as a whole (§13.6), idempotent by compaction id: once
// the record is committed, committing again returns the stored outcome and changes nothing.
import { type Kysely, sql } from 'kysely';
import { canonicalJson } from '../../../engine/commit/messageKeys.js';
import { type CarriedUpdate, checkSummaryIndex, planInPlace } from '../../../engine/commit/plan.js';
import { estimateMessageTokensRough } from '../../../engine/tokens.js';
import { isCommitted } from '../compactions.js';
import { insertMessageRows } from '../messageInsert.js';
import { messageToFields, toStoredMessage } from '../messageRows.js';
import type { Database } from '../schema.js';
import { countCompression } from '../sessions.js';
import { type WriteRetryOptions, withTenantWrite } from '../writeRetry.js';
import {
  type CommitRow,
  commitTotals,
  finishCompaction,
  keepRowsSince,
  lockForCommit,
  readTranscript,
  setPositions,
  storedOutcome,
} from './shared.js';
import type { CommitOutcome, InPlaceCommit } from './types.js';

/**
 * Carried rows: the new position (row state), and on the message row only what changed there — the output's runtime
 * properties (`extra`, with the token estimate of the message they now make) where they differ, the summary body
 * where it now lives. Rows that only move never touch `messages`, so their search columns and index entries stay as
 * they are (DESIGN.md §4).
 */
async function updateCarriedRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  rows: readonly CommitRow[],
  updates: readonly CarriedUpdate[],
): Promise<void> {
  if (updates.length === 0) return;
  const moved = new Map(rows.map((row) => [row.id, row]));
  const positions = updates.filter((u) => moved.get(u.id)?.position !== u.position);
  await setPositions(
    tx,
    tenantId,
    positions.map((u) => ({ id: u.id, position: u.position })),
  );
  const rewritten = updates.flatMap((u) => {
    const extra = messageToFields(u.message).extra;
    const stored = moved.get(u.id);
    const extraChanged = !stored || canonicalJson(messageToFields(stored.message).extra) !== canonicalJson(extra);
    if (!extraChanged && u.summaryBody === undefined) return [];
    return [
      {
        id: u.id,
        ...(extra ? { extra } : {}),
        ...(u.summaryBody !== undefined ? { summary_body: u.summaryBody } : {}),
        // As an insert estimates it: the message the row reads back as (the transcript's totals sum these).
        ...(extraChanged ? { token_estimate: estimateMessageTokensRough(toStoredMessage(u.message)) } : {}),
      },
    ];
  });
  if (rewritten.length === 0) return;
  await sql`
    UPDATE messages AS m SET extra = v.extra, summary_body = coalesce(v.summary_body, m.summary_body),
           token_estimate = coalesce(v.token_estimate, m.token_estimate)
      FROM jsonb_to_recordset(${JSON.stringify(rewritten)}::jsonb)
           AS v(id bigint, extra jsonb, summary_body text, token_estimate integer)
     WHERE m.tenant_id = ${tenantId} AND m.session_id = ${sessionId} AND m.id = v.id`.execute(tx);
}

async function archiveRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  ids: readonly number[],
  compactionId: string,
): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE message_state SET active = false, compacted = true, compaction_id = ${compactionId}
     WHERE tenant_id = ${tenantId} AND session_id = ${sessionId} AND message_id = ANY(${ids}::bigint[])`.execute(tx);
}

/**
 * Carried rows keep their id (new position), the other old rows are archived (inactive, compacted, still
 * searchable), new messages are inserted; afterwards the active rows in position order are exactly `output`
 * followed by the rows appended since the compaction read the transcript. Throws TranscriptChangedError (writing
 * nothing) when `expectedRowIds` are not the first active rows.
 */
export async function commitInPlace(
  db: Kysely<Database>,
  tenantId: string,
  input: InPlaceCommit,
  retry?: WriteRetryOptions,
): Promise<CommitOutcome> {
  checkSummaryIndex(input);
  return withTenantWrite(
    db,
    tenantId,
    async (tx) => {
      const { conversation, session, record } = await lockForCommit(tx, tenantId, input.compactionId, input.sessionId);
      if (isCommitted(record)) return storedOutcome(tx, tenantId, record, conversation);
      const { rows, since } = await readTranscript(
        tx,
        tenantId,
        input.sessionId,
        input.expectedRowIds,
        input.inputMessages,
      );
      const plan = planInPlace(rows, input);
      await updateCarriedRows(tx, tenantId, input.sessionId, rows, plan.updates);
      await archiveRows(tx, tenantId, input.sessionId, plan.archivedIds, input.compactionId);
      const target = { sessionId: input.sessionId, conversationId: session.conversation_id };
      const inserted = await insertMessageRows(
        tx,
        tenantId,
        target,
        plan.inserts.map((row) => ({ ...row, compactionId: input.compactionId })),
      );
      await keepRowsSince(tx, tenantId, since, input.output, input.sessionId);
      const compressionCount = await countCompression(tx, tenantId, input.sessionId);
      const summaryRow = inserted.find((row) => row.position === input.summaryIndex);
      return finishCompaction(tx, tenantId, {
        input,
        session,
        sessionId: input.sessionId,
        compressionCount,
        compactedRowIds: plan.archivedIds,
        insertedRowIds: inserted.map((row) => row.id),
        summaryRowId: summaryRow?.id ?? plan.carriedSummaryRowId,
        keptSinceRowIds: since.map((row) => row.id),
        totals: await commitTotals(tx, tenantId, conversation, input.sessionId, input.sessionId),
      });
    },
    retry,
  );
}
