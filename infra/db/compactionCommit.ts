// The commit of a compaction result (SPEC §13.2 in place, §13.3 rotation): ONE transaction, retried as a whole
// (§13.6), idempotent by compaction id — once the record is committed, committing again returns the stored outcome
// and changes nothing. The record and the `session:compress` event (§13.5) are written in the same transaction.
//
// The log keeps growing while a compaction runs (the gateway commits batches independently, DESIGN.md §3): the rows
// the compaction read must still be the first active rows, in order; every row appended since is kept after the
// output, in order (positions renumbered; after a rotation they move to the new session). The conversation's totals
// and version are updated under its lock (conversation → session → compaction, as every writer).
import { type Kysely, sql } from 'kysely';
import type { CommitNote } from '../../contracts/compaction.js';
import { SUMMARY_PREFIX } from '../../engine/constants.js';
import type { ChatMessage } from '../../engine/types.js';
import { matchCarriedRows } from './carryMatch.js';
import { commitNoteOf, isCommitted, lockCompaction } from './compactions.js';
import { type LogTotals, lockConversation, setTotals, totalsOf } from './conversations.js';
import { canonicalJson, messageToFields, wireKey } from './messageRows.js';
import {
  insertMessageRows,
  type RowToInsert,
  type StoredMessage,
  selectActiveRows,
  selectTranscriptTotals,
} from './messages.js';
import type { CompactionRow, ConversationRow, Database, SessionRow } from './schema.js';
import { insertSessionIfAbsent, lockSession, nextRotationTitle } from './sessions.js';
import { CompactionNotFoundError, TranscriptChangedError } from './storeErrors.js';
import type { TenantTx } from './tenant.js';
import { type WriteRetryOptions, withTenantWrite } from './writeRetry.js';

export {
  CompactionNotFoundError,
  CompactionNotReplayableError,
  SessionNotFoundError,
  TranscriptChangedError,
} from './storeErrors.js';
export { type ReplayedSummary, type ReplayOutcome, replaceReplayedSummary } from './summaryReplay.js';

export const SESSION_COMPRESS_EVENT = 'session:compress';

/** The result of one compaction, as the commit needs it. */
export interface CompactionResult {
  compactionId: string;
  /** The active row ids, in position order, that the compaction read. */
  expectedRowIds: readonly number[];
  /** The compressed transcript M. */
  output: readonly ChatMessage[];
  /** Index in `output` of the message that holds the summary (standalone or merged). */
  summaryIndex: number;
  summaryBody: string;
  fallbackUsed: boolean;
  /** The CompressionStats; its `summary` (the summary text) is stored as the record's summary. */
  stats: object;
  /** The session's source; defaults to the stored one. */
  platform?: string;
}

export interface InPlaceCommit extends CompactionResult {
  sessionId: string;
}

export interface RotationCommit extends CompactionResult {
  oldSessionId: string;
  newSessionId: string;
}

export interface CommitOutcome {
  compactionId: string;
  status: 'committed' | 'fallback';
  inPlace: boolean;
  /** The session that now holds the compacted transcript. */
  sessionId: string;
  /** '' in place; the previous session after a rotation. */
  oldSessionId: string;
  compressionCount: number;
  /** In place: the old rows archived by this commit. Rotation: the old rows not carried into the new session. */
  compactedRowIds: number[];
  insertedRowIds: number[];
  summaryRowId: number | null;
  /** True when the compaction had been committed before: nothing was written this time. */
  alreadyCommitted: boolean;
  /** Rows appended after the compaction read the transcript, kept after the output (in order). */
  keptSinceRowIds: number[];
  /** The conversation's totals after the commit (null: the session has no conversation record). */
  totals: LogTotals | null;
}

function validateResult(result: CompactionResult): void {
  if (
    !Number.isInteger(result.summaryIndex) ||
    result.summaryIndex < 0 ||
    result.summaryIndex >= result.output.length
  ) {
    throw new RangeError(
      `summaryIndex ${result.summaryIndex} is outside the output (${result.output.length} messages)`,
    );
  }
}

/** SPEC §8.5.7: the summary text is SUMMARY_PREFIX + '\n' + body; the stats carry it when the engine produced it. */
function summaryTextOf(result: CompactionResult): string {
  const fromStats = (result.stats as { summary?: unknown }).summary;
  return typeof fromStats === 'string' ? fromStats : `${SUMMARY_PREFIX}\n${result.summaryBody}`;
}

/** The rows the compaction read (still the first active rows, in order) and the rows appended since. */
async function readTranscript(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  expectedRowIds: readonly number[],
): Promise<{ rows: StoredMessage[]; since: StoredMessage[] }> {
  const active = await selectActiveRows(tx, tenantId, sessionId);
  const rows = active.slice(0, expectedRowIds.length);
  const prefix = rows.length === expectedRowIds.length && rows.every((row, i) => row.id === expectedRowIds[i]);
  if (!prefix) {
    throw new TranscriptChangedError(
      sessionId,
      expectedRowIds,
      active.map((r) => r.id),
    );
  }
  return { rows, since: active.slice(expectedRowIds.length) };
}

/**
 * Locks conversation, session and compaction record, in that order. The record's conversation is read first
 * (it never changes) so that the conversation lock can come first.
 */
async function lockForCommit(tx: TenantTx, tenantId: string, compactionId: string, sessionId: string) {
  const owner = await tx
    .selectFrom('compactions')
    .select('conversation_id')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', compactionId)
    .executeTakeFirst();
  if (!owner) throw new CompactionNotFoundError(compactionId);
  const conversation = await lockConversation(tx, tenantId, owner.conversation_id);
  const session = await lockSession(tx, tenantId, sessionId);
  const record = await lockCompaction(tx, tenantId, compactionId, sessionId);
  return { conversation, session, record };
}

/** Updates the conversation record (when the session is its current one) with the committed transcript. */
async function commitTotals(
  tx: TenantTx,
  tenantId: string,
  conversation: ConversationRow | undefined,
  oldSessionId: string,
  sessionId: string,
): Promise<LogTotals | null> {
  if (!conversation || conversation.current_session_id !== oldSessionId) return null;
  // Read back after the writes: exact, whatever was appended meanwhile.
  const live = await selectTranscriptTotals(tx, tenantId, sessionId);
  return setTotals(tx, tenantId, conversation.id, {
    ...live,
    ...(sessionId !== oldSessionId ? { currentSessionId: sessionId } : {}),
  });
}

/** Rows appended since the compaction read: positions right after the output, in order (and their new session). */
async function keepRowsSince(
  tx: TenantTx,
  tenantId: string,
  since: readonly StoredMessage[],
  output: readonly ChatMessage[],
  sessionId: string,
): Promise<void> {
  const moves = since
    .map((row, i) => ({ id: row.id, position: output.length + i, moved: row.sessionId !== sessionId }))
    .filter((m, i) => m.moved || since[i]!.position !== m.position);
  if (moves.length === 0) return;
  await sql`
    UPDATE messages AS m SET position = v.position, session_id = ${sessionId}
      FROM jsonb_to_recordset(${JSON.stringify(moves)}::jsonb) AS v(id bigint, position integer)
     WHERE m.tenant_id = ${tenantId} AND m.id = v.id`.execute(tx);
}

function carriedIndexes(rows: readonly StoredMessage[], output: readonly ChatMessage[]): number[] {
  return matchCarriedRows(
    rows.map((row) => wireKey(row.message)),
    output.map(wireKey),
  );
}

async function storedOutcome(
  tx: Kysely<Database>,
  tenantId: string,
  record: CompactionRow,
  conversation: ConversationRow | undefined,
): Promise<CommitOutcome> {
  const note = commitNoteOf(record);
  let compressionCount = note?.compressionCount;
  if (compressionCount === undefined) {
    const event = await tx
      .selectFrom('events')
      .select('payload')
      .where('tenant_id', '=', tenantId)
      .where('type', '=', SESSION_COMPRESS_EVENT)
      .where('compaction_id', '=', record.id)
      .executeTakeFirst();
    compressionCount = Number(event?.payload.compression_count ?? 0);
  }
  const rotated = record.new_session_id !== null;
  return {
    compactionId: record.id,
    status: record.status === 'fallback' ? 'fallback' : 'committed',
    inPlace: !rotated,
    sessionId: record.new_session_id ?? record.session_id,
    oldSessionId: rotated ? record.session_id : '',
    compressionCount,
    compactedRowIds: record.compacted_row_ids,
    insertedRowIds: note?.insertedRowIds ?? [],
    summaryRowId: note?.summaryRowId ?? null,
    alreadyCommitted: true,
    keptSinceRowIds: note?.keptSinceRowIds ?? [],
    totals: conversation ? totalsOf(conversation) : null,
  };
}

interface Finish {
  result: CompactionResult;
  session: SessionRow;
  /** The session holding the compacted transcript. */
  sessionId: string;
  oldSessionId: string;
  compressionCount: number;
  compactedRowIds: number[];
  insertedRowIds: number[];
  summaryRowId: number | null;
  keptSinceRowIds: number[];
  totals: LogTotals | null;
}

/** SPEC §13.2 step 6 / §13.3 step 5: the compaction record and the event, in the commit's transaction. */
async function finishCompaction(tx: Kysely<Database>, tenantId: string, f: Finish): Promise<CommitOutcome> {
  const { result } = f;
  const inPlace = f.oldSessionId === '';
  const status = result.fallbackUsed ? 'fallback' : 'committed';
  const note: CommitNote = {
    summaryRowId: f.summaryRowId,
    insertedRowIds: f.insertedRowIds,
    compressionCount: f.compressionCount,
    keptSinceRowIds: f.keptSinceRowIds,
  };
  await tx
    .updateTable('compactions')
    .set({
      status,
      in_place: inPlace,
      new_session_id: inPlace ? null : f.sessionId,
      fallback_used: result.fallbackUsed,
      replayable: result.fallbackUsed,
      summary: summaryTextOf(result),
      summary_body: result.summaryBody,
      stats: JSON.stringify({ ...result.stats, commit: note }),
      compacted_row_ids: f.compactedRowIds,
      // `error` is kept: for a fallback it says why the summary failed (the operator's reason to replay).
      completed_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', result.compactionId)
    .execute();
  // SPEC §13.5 payload; the unique index events_once_per_compaction keeps it to one event per compaction.
  const payload = {
    platform: result.platform ?? f.session.source,
    session_id: f.sessionId,
    old_session_id: f.oldSessionId,
    in_place: inPlace,
    compression_count: f.compressionCount,
  };
  await tx
    .insertInto('events')
    .values({
      tenant_id: tenantId,
      session_id: f.sessionId,
      type: SESSION_COMPRESS_EVENT,
      payload: JSON.stringify(payload),
      compaction_id: result.compactionId,
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'type', 'compaction_id']).where('compaction_id', 'is not', null).doNothing(),
    )
    .execute();
  return {
    compactionId: result.compactionId,
    status,
    inPlace,
    sessionId: f.sessionId,
    oldSessionId: f.oldSessionId,
    compressionCount: f.compressionCount,
    compactedRowIds: f.compactedRowIds,
    insertedRowIds: f.insertedRowIds,
    summaryRowId: f.summaryRowId,
    alreadyCommitted: false,
    keptSinceRowIds: f.keptSinceRowIds,
    totals: f.totals,
  };
}

/** A carried row whose position, extra properties or summary body change. */
interface CarriedUpdate {
  id: number;
  position: number;
  extra?: Record<string, unknown>;
  summary_body?: string;
}

interface InPlacePlan {
  updates: CarriedUpdate[];
  archivedIds: number[];
  inserts: RowToInsert[];
  carriedSummaryRowId: number | null;
}

/** SPEC §13.2 steps 2–4, decided in memory from the greedy match. */
function planInPlace(
  rows: readonly StoredMessage[],
  result: CompactionResult,
  carriedBy: readonly number[],
): InPlacePlan {
  const plan: InPlacePlan = { updates: [], archivedIds: [], inserts: [], carriedSummaryRowId: null };
  const carried = new Set<number>();
  result.output.forEach((message, position) => {
    const isSummary = position === result.summaryIndex;
    const r = carriedBy[position] ?? -1;
    const row = rows[r];
    if (!row) {
      plan.inserts.push({
        message,
        position,
        compactionId: result.compactionId,
        ...(isSummary ? { summaryBody: result.summaryBody } : {}),
      });
      return;
    }
    carried.add(r);
    if (isSummary) plan.carriedSummaryRowId = row.id;
    // Wire fields are equal; other runtime properties follow the output so the transcript reads back as M.
    const extra = messageToFields(message).extra;
    const extraChanged = canonicalJson(messageToFields(row.message).extra) !== canonicalJson(extra);
    if (row.position !== position || extraChanged || isSummary) {
      plan.updates.push({
        id: row.id,
        position,
        ...(extra ? { extra } : {}),
        ...(isSummary ? { summary_body: result.summaryBody } : {}),
      });
    }
  });
  rows.forEach((row, r) => {
    if (!carried.has(r)) plan.archivedIds.push(row.id);
  });
  return plan;
}

async function updateCarriedRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  updates: readonly CarriedUpdate[],
): Promise<void> {
  if (updates.length === 0) return;
  await sql`
    UPDATE messages AS m
       SET position = v.position, extra = v.extra, summary_body = coalesce(v.summary_body, m.summary_body)
      FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
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
 * SPEC §13.2: carried rows keep their id (new position), the other old rows are archived (inactive, compacted, still
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
  validateResult(input);
  return withTenantWrite(
    db,
    tenantId,
    async (tx) => {
      const { conversation, session, record } = await lockForCommit(tx, tenantId, input.compactionId, input.sessionId);
      if (isCommitted(record)) return storedOutcome(tx, tenantId, record, conversation);
      const { rows, since } = await readTranscript(tx, tenantId, input.sessionId, input.expectedRowIds);
      const plan = planInPlace(rows, input, carriedIndexes(rows, input.output));
      await updateCarriedRows(tx, tenantId, input.sessionId, plan.updates);
      await archiveRows(tx, tenantId, input.sessionId, plan.archivedIds, input.compactionId);
      const target = { sessionId: input.sessionId, conversationId: session.conversation_id };
      const inserted = await insertMessageRows(tx, tenantId, target, plan.inserts);
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
        result: input,
        session,
        sessionId: input.sessionId,
        oldSessionId: '',
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

/**
 * SPEC §13.3: a new session (parent = old, compression_count = old + 1, numbered title) holding all of `output`;
 * the old session is ended with reason 'compression' unless it already ended (the first end reason wins); the rows
 * it held when the compaction read it are left untouched, the rows appended since move to the new session after the
 * output. Throws TranscriptChangedError (writing nothing) when `expectedRowIds` are not the first active rows.
 */
export async function commitRotation(
  db: Kysely<Database>,
  tenantId: string,
  input: RotationCommit,
  retry?: WriteRetryOptions,
): Promise<CommitOutcome> {
  validateResult(input);
  if (input.newSessionId === input.oldSessionId) throw new Error('commitRotation: the new session id must differ');
  return withTenantWrite(
    db,
    tenantId,
    async (tx) => {
      const locked = await lockForCommit(tx, tenantId, input.compactionId, input.oldSessionId);
      const { conversation, session: old, record } = locked;
      if (isCommitted(record)) return storedOutcome(tx, tenantId, record, conversation);
      const { rows, since } = await readTranscript(tx, tenantId, input.oldSessionId, input.expectedRowIds);
      const carried = new Set(carriedIndexes(rows, input.output));
      const created = await insertSessionIfAbsent(tx, tenantId, {
        id: input.newSessionId,
        conversationId: old.conversation_id,
        source: old.source,
        model: old.model,
        provider: old.provider,
        title: await nextRotationTitle(tx, tenantId, old.title),
        parentSessionId: old.id,
        compressionCount: old.compression_count + 1,
        responsesNativeDisabled: old.responses_native_disabled,
      });
      if (!created) throw new Error(`commitRotation: session id ${input.newSessionId} is already taken`);
      const inserted = await insertMessageRows(
        tx,
        tenantId,
        { sessionId: created.id, conversationId: old.conversation_id },
        input.output.map((message, position) => ({
          message,
          position,
          compactionId: input.compactionId,
          ...(position === input.summaryIndex ? { summaryBody: input.summaryBody } : {}),
        })),
      );
      await tx
        .updateTable('sessions')
        .set({ ended_at: sql`now()`, end_reason: 'compression' })
        .where('tenant_id', '=', tenantId)
        .where('id', '=', old.id)
        .where('ended_at', 'is', null)
        .execute();
      await keepRowsSince(tx, tenantId, since, input.output, created.id);
      return finishCompaction(tx, tenantId, {
        result: input,
        session: old,
        sessionId: created.id,
        oldSessionId: old.id,
        compressionCount: created.compression_count,
        compactedRowIds: rows.filter((_, r) => !carried.has(r)).map((row) => row.id),
        insertedRowIds: inserted.map((row) => row.id),
        summaryRowId: inserted.find((row) => row.position === input.summaryIndex)?.id ?? null,
        keptSinceRowIds: since.map((row) => row.id),
        totals: await commitTotals(tx, tenantId, conversation, old.id, created.id),
      });
    },
    retry,
  );
}
