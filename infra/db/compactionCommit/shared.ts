// What both commit modes share: the locks, the transcript check, the rows appended since, the totals, the record and
// the `session:compress` event (SPEC §13.2 step 6, §13.3 step 5, §13.5), and the stored outcome of a repeated commit.
//
// The log keeps growing while a compaction runs (the gateway commits batches independently, DESIGN.md §3): the rows
// the compaction read must still be the first active rows, in order; every row appended since is kept after the
// output, in order (positions renumbered; after a rotation they move to the new session). The conversation's totals
// and version are updated under its lock (conversation → session → compaction, as every writer).
import { type Kysely, sql } from 'kysely';
import type { CommitNote } from '../../../contracts/compaction.js';
import { SUMMARY_PREFIX } from '../../../engine/constants.js';
import type { ChatMessage } from '../../../engine/types.js';
import { commitNoteOf, lockCompaction } from '../compactions.js';
import { type LogTotals, lockConversation, setTotals, totalsOf } from '../conversationHead.js';
import { withStoredExtra } from '../messageRows.js';
import { selectActiveRows, selectTranscriptTotals } from '../messages.js';
import type { CompactionRow, ConversationRow, Database, SessionRow } from '../schema.js';
import { lockSession } from '../sessions.js';
import { CompactionNotFoundError, TranscriptChangedError } from '../storeErrors.js';
import type { TenantTx } from '../tenant.js';
import { selectActiveRowStates } from './rowStates.js';
import type { CommitInput, CommitOutcome } from './types.js';

export const SESSION_COMPRESS_EVENT = 'session:compress';

/**
 * SPEC §8.5.7: the summary text is SUMMARY_PREFIX + '\n' + body; the stats carry it when the engine produced it.
 * Null for an output without a summary (a plugin engine's, SPEC §10.3).
 */
function summaryTextOf(input: CommitInput): string | null {
  if (typeof input.stats.summary === 'string') return input.stats.summary;
  return input.summaryBody === null ? null : `${SUMMARY_PREFIX}\n${input.summaryBody}`;
}

/** A transcript row as the commit needs it. */
export interface CommitRow {
  id: number;
  sessionId: string;
  position: number;
  pinned: boolean;
  message: ChatMessage;
}

/** A row appended since the compaction read the transcript: kept after the output (its message is not needed). */
export type SinceRow = Omit<CommitRow, 'message'>;

/**
 * The rows the compaction read (still the first active rows, in order) and the rows appended since. With the
 * messages the compaction read (`inputMessages`, one per expected row) only the rows' state is read: a row's wire
 * columns never change, its runtime properties (`extra`) and pin are read now.
 */
export async function readTranscript(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  expectedRowIds: readonly number[],
  inputMessages?: readonly ChatMessage[],
): Promise<{ rows: CommitRow[]; since: SinceRow[] }> {
  const n = expectedRowIds.length;
  if (inputMessages === undefined) {
    const active = await selectActiveRows(tx, tenantId, sessionId);
    checkPrefix(sessionId, expectedRowIds, active);
    return { rows: active.slice(0, n), since: active.slice(n) };
  }
  if (inputMessages.length !== n) throw new RangeError(`${inputMessages.length} input messages for ${n} rows`);
  const states = await selectActiveRowStates(tx, tenantId, sessionId);
  checkPrefix(sessionId, expectedRowIds, states);
  const rows = states.slice(0, n).map((row, i) => ({
    id: row.id,
    sessionId: row.sessionId,
    position: row.position,
    pinned: row.pinned,
    message: withStoredExtra(inputMessages[i] as ChatMessage, row.extra, row.hasRawMessage),
  }));
  return { rows, since: states.slice(n) };
}

/** Throws TranscriptChangedError unless `expectedRowIds` are the first active rows, in order. */
function checkPrefix(sessionId: string, expectedRowIds: readonly number[], active: readonly { id: number }[]): void {
  if (active.length >= expectedRowIds.length && expectedRowIds.every((id, i) => active[i]?.id === id)) return;
  throw new TranscriptChangedError(
    sessionId,
    expectedRowIds,
    active.map((r) => r.id),
  );
}

/**
 * Locks conversation, session and compaction record, in that order. The record's conversation is read first
 * (it never changes) so that the conversation lock can come first.
 */
export async function lockForCommit(tx: TenantTx, tenantId: string, compactionId: string, sessionId: string) {
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
export async function commitTotals(
  tx: TenantTx,
  tenantId: string,
  conversation: ConversationRow | undefined,
  readSessionId: string,
  sessionId: string,
): Promise<LogTotals | null> {
  if (!conversation || conversation.current_session_id !== readSessionId) return null;
  // Read back after the writes: exact, whatever was appended meanwhile.
  const live = await selectTranscriptTotals(tx, tenantId, sessionId);
  return setTotals(
    tx,
    tenantId,
    conversation.id,
    { ...live, ...(sessionId !== readSessionId ? { currentSessionId: sessionId } : {}) },
    { compaction: true },
  );
}

/** New positions of rows (row state only; a row's session moves with `sessionId`). */
export async function setPositions(
  tx: Kysely<Database>,
  tenantId: string,
  moves: readonly { id: number; position: number }[],
  sessionId?: string,
): Promise<void> {
  if (moves.length === 0) return;
  await sql`
    UPDATE message_state AS s SET position = v.position, session_id = coalesce(${sessionId ?? null}, s.session_id)
      FROM jsonb_to_recordset(${JSON.stringify(moves)}::jsonb) AS v(id bigint, position integer)
     WHERE s.tenant_id = ${tenantId} AND s.message_id = v.id`.execute(tx);
}

/**
 * Rows appended since the compaction read: positions right after the output, in order. After a rotation they move
 * to the new session: the state row and the message row (search reads a row's session from it), only those rows.
 */
export async function keepRowsSince(
  tx: TenantTx,
  tenantId: string,
  since: readonly SinceRow[],
  output: readonly ChatMessage[],
  sessionId: string,
): Promise<void> {
  const moves = since
    .map((row, i) => ({ id: row.id, position: output.length + i, moved: row.sessionId !== sessionId }))
    .filter((m, i) => m.moved || since[i]!.position !== m.position);
  await setPositions(tx, tenantId, moves, sessionId);
  const moved = moves.filter((m) => m.moved).map((m) => m.id);
  if (moved.length === 0) return;
  await sql`
    UPDATE messages SET session_id = ${sessionId}
     WHERE tenant_id = ${tenantId} AND id = ANY(${moved}::bigint[])`.execute(tx);
}

/** The outcome of a compaction committed before: read back, nothing written. */
export async function storedOutcome(
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

/** What a commit mode wrote, for the record and the event. */
export interface Written {
  input: CommitInput;
  /** The session the compaction read. */
  session: SessionRow;
  /** The session holding the compacted transcript: the same one in place, the new one after a rotation. */
  sessionId: string;
  compressionCount: number;
  compactedRowIds: number[];
  insertedRowIds: number[];
  summaryRowId: number | null;
  keptSinceRowIds: number[];
  totals: LogTotals | null;
}

/** SPEC §13.5: the `session:compress` event of a compaction (one per compaction: events_once_per_compaction). */
export async function insertCompressEvent(
  tx: Kysely<Database>,
  tenantId: string,
  compactionId: string,
  payload: {
    platform: string;
    session_id: string;
    old_session_id: string;
    in_place: boolean;
    compression_count: number;
    /** SPEC §15.2: a Codex app-server compaction's runtime and ids. */
    runtime?: 'codex_app_server';
    thread_id?: string;
    turn_id?: string;
  },
): Promise<void> {
  await tx
    .insertInto('events')
    .values({
      tenant_id: tenantId,
      session_id: payload.session_id,
      type: SESSION_COMPRESS_EVENT,
      payload: JSON.stringify(payload),
      compaction_id: compactionId,
    })
    .onConflict((oc) =>
      oc.columns(['tenant_id', 'type', 'compaction_id']).where('compaction_id', 'is not', null).doNothing(),
    )
    .execute();
}

/** SPEC §13.2 step 6 / §13.3 step 5: the compaction record and the event, in the commit's transaction. */
export async function finishCompaction(tx: Kysely<Database>, tenantId: string, w: Written): Promise<CommitOutcome> {
  const { input } = w;
  const inPlace = w.sessionId === w.session.id;
  const oldSessionId = inPlace ? '' : w.session.id;
  const status = input.fallbackUsed ? 'fallback' : 'committed';
  const note: CommitNote = {
    summaryRowId: w.summaryRowId,
    insertedRowIds: w.insertedRowIds,
    compressionCount: w.compressionCount,
    keptSinceRowIds: w.keptSinceRowIds,
  };
  await tx
    .updateTable('compactions')
    .set({
      status,
      in_place: inPlace,
      new_session_id: inPlace ? null : w.sessionId,
      fallback_used: input.fallbackUsed,
      replayable: input.fallbackUsed,
      summary: summaryTextOf(input),
      summary_body: input.summaryBody,
      stats: JSON.stringify({ ...input.stats, commit: note }),
      compacted_row_ids: w.compactedRowIds,
      ...(input.engine ? { engine: input.engine, engine_fallback: null } : {}),
      // `error` is kept: for a fallback it says why the summary failed (the operator's reason to replay).
      completed_at: sql`now()`,
      updated_at: sql`now()`,
    })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', input.compactionId)
    .execute();
  // SPEC §13.5 payload; the unique index events_once_per_compaction keeps it to one event per compaction.
  const payload = {
    platform: input.platform ?? w.session.source,
    session_id: w.sessionId,
    old_session_id: oldSessionId,
    in_place: inPlace,
    compression_count: w.compressionCount,
  };
  await insertCompressEvent(tx, tenantId, input.compactionId, payload);
  return {
    compactionId: input.compactionId,
    status,
    inPlace,
    sessionId: w.sessionId,
    oldSessionId,
    compressionCount: w.compressionCount,
    compactedRowIds: w.compactedRowIds,
    insertedRowIds: w.insertedRowIds,
    summaryRowId: w.summaryRowId,
    alreadyCommitted: false,
    keptSinceRowIds: w.keptSinceRowIds,
    totals: w.totals,
  };
}
