// SPEC §13.2: the in-place commit — ONE transaction, retried as a whole (§13.6), idempotent by compaction id: once
// the record is committed, committing again returns the stored outcome and changes nothing.
import { type Kysely, sql } from 'kysely';
import { type CarriedUpdate, checkSummaryIndex, planInPlace } from '../../../engine/commit/plan.js';
import { isCommitted } from '../compactions.js';
import { messageToFields } from '../messageRows.js';
import { insertMessageRows } from '../messages.js';
import type { Database } from '../schema.js';
import { type WriteRetryOptions, withTenantWrite } from '../writeRetry.js';
import {
  commitTotals,
  finishCompaction,
  keepRowsSince,
  lockForCommit,
  readTranscript,
  storedOutcome,
} from './shared.js';
import type { CommitOutcome, InPlaceCommit } from './types.js';

/** Carried rows: new position, the output's runtime properties (`extra`), the summary body where it now lives. */
async function updateCarriedRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  updates: readonly CarriedUpdate[],
): Promise<void> {
  if (updates.length === 0) return;
  const values = updates.map((u) => {
    const extra = messageToFields(u.message).extra;
    return {
      id: u.id,
      position: u.position,
      ...(extra ? { extra } : {}),
      ...(u.summaryBody !== undefined ? { summary_body: u.summaryBody } : {}),
    };
  });
  await sql`
    UPDATE messages AS m
       SET position = v.position, extra = v.extra, summary_body = coalesce(v.summary_body, m.summary_body)
      FROM jsonb_to_recordset(${JSON.stringify(values)}::jsonb)
           AS v(id bigint, position integer, extra jsonb, summary_body text)
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
    UPDATE messages SET active = false, compacted = true, compaction_id = ${compactionId}
     WHERE tenant_id = ${tenantId} AND session_id = ${sessionId} AND id = ANY(${ids}::bigint[])`.execute(tx);
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
      const { rows, since } = await readTranscript(tx, tenantId, input.sessionId, input.expectedRowIds);
      const plan = planInPlace(rows, input);
      await updateCarriedRows(tx, tenantId, input.sessionId, plan.updates);
      await archiveRows(tx, tenantId, input.sessionId, plan.archivedIds, input.compactionId);
      const target = { sessionId: input.sessionId, conversationId: session.conversation_id };
      const inserted = await insertMessageRows(
        tx,
        tenantId,
        target,
        plan.inserts.map((row) => ({ ...row, compactionId: input.compactionId })),
      );
      await keepRowsSince(tx, tenantId, since, input.output, input.sessionId);
      const bumped = await tx
        .updateTable('sessions')
        .set({ compression_count: sql`compression_count + 1` })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', input.sessionId)
        .returning('compression_count')
        .executeTakeFirstOrThrow();
      const summaryRow = inserted.find((row) => row.position === input.summaryIndex);
      return finishCompaction(tx, tenantId, {
        input,
        session,
        sessionId: input.sessionId,
        compressionCount: bumped.compression_count,
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
