// SPEC §13.3: the rotation commit — ONE transaction, retried as a whole (§13.6), idempotent by compaction id.
import type { Kysely } from 'kysely';
import { checkSummaryIndex, planRotation } from '../../../engine/commit/plan.js';
import { isCommitted } from '../compactions.js';
import { insertMessageRows } from '../messageInsert.js';
import type { Database } from '../schema.js';
import { rotateSession } from '../sessions.js';
import { type WriteRetryOptions, withTenantWrite } from '../writeRetry.js';
import {
  commitTotals,
  finishCompaction,
  keepRowsSince,
  lockForCommit,
  readTranscript,
  storedOutcome,
} from './shared.js';
import type { CommitOutcome, RotationCommit } from './types.js';

/**
 * A new session (parent = old, compression_count = old + 1, numbered title) holding all of `output`; the old session
 * is ended with reason 'compression' unless it already ended (the first end reason wins); the rows it held when the
 * compaction read it are left untouched, the rows appended since move to the new session after the output. Throws
 * TranscriptChangedError (writing nothing) when `expectedRowIds` are not the first active rows.
 */
export async function commitRotation(
  db: Kysely<Database>,
  tenantId: string,
  input: RotationCommit,
  retry?: WriteRetryOptions,
): Promise<CommitOutcome> {
  checkSummaryIndex(input);
  if (input.newSessionId === input.oldSessionId) throw new Error('commitRotation: the new session id must differ');
  return withTenantWrite(
    db,
    tenantId,
    async (tx) => {
      const locked = await lockForCommit(tx, tenantId, input.compactionId, input.oldSessionId);
      const { conversation, session: old, record } = locked;
      if (isCommitted(record)) return storedOutcome(tx, tenantId, record, conversation);
      const { rows, since } = await readTranscript(
        tx,
        tenantId,
        input.oldSessionId,
        input.expectedRowIds,
        input.inputMessages,
      );
      const plan = planRotation(rows, input);
      const created = await rotateSession(tx, tenantId, old, input.newSessionId);
      const inserted = await insertMessageRows(
        tx,
        tenantId,
        { sessionId: created.id, conversationId: old.conversation_id },
        plan.inserts.map((row) => ({ ...row, compactionId: input.compactionId })),
      );
      await keepRowsSince(tx, tenantId, since, input.output, created.id);
      return finishCompaction(tx, tenantId, {
        input,
        session: old,
        sessionId: created.id,
        compressionCount: created.compression_count,
        compactedRowIds: plan.notCarriedIds,
        insertedRowIds: inserted.map((row) => row.id),
        summaryRowId: inserted.find((row) => row.position === input.summaryIndex)?.id ?? null,
        keptSinceRowIds: since.map((row) => row.id),
        totals: await commitTotals(tx, tenantId, conversation, old.id, created.id),
      });
    },
    retry,
  );
}
