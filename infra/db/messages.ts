// Message rows: transcript reads (SPEC §13.1); the batch insert is messageInsert.ts.
//
// A row is two rows (migrations/0008): `messages` holds the message, its text and search columns, written once;
// `message_state` holds what compaction commits and replays change (session, active, compacted, position,
// compaction id), so those changes never rewrite the search columns or their index entries (DESIGN.md §4).
import { type Kysely, sql } from 'kysely';
import type { ChatMessage } from '../../engine/types.js';
import { fieldsToMessage, MESSAGE_COLUMNS } from './messageRows.js';
import type { Database, MessageRow, MessageStateRow } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

export interface StoredMessage {
  id: number;
  sessionId: string;
  position: number;
  active: boolean;
  compacted: boolean;
  compactionId: string | null;
  summaryBody: string | null;
  idempotencyKey: string | null;
  tokenEstimate: number;
  timestamp: Date;
  /** An operator pinned it (SPEC §19 `rehydrate_pinned`). */
  pinned: boolean;
  message: ChatMessage;
}

const TEXT_COLUMNS = [
  'm.id',
  'm.summary_body',
  'm.idempotency_key',
  'm.token_estimate',
  'm.timestamp',
  'm.pinned',
] as const;
const STATE_COLUMNS = ['s.session_id', 's.position', 's.active', 's.compacted', 's.compaction_id'] as const;
/** The message columns (messageRows.ts) on the alias `m` of selectWithState. */
export const MESSAGE_COLUMNS_OF_M = MESSAGE_COLUMNS.map((column) => `m.${column}` as const);
const STORED_COLUMNS = [...TEXT_COLUMNS, ...STATE_COLUMNS, ...MESSAGE_COLUMNS_OF_M] as const;

type StoredRow = Pick<
  MessageRow,
  | 'id'
  | 'summary_body'
  | 'idempotency_key'
  | 'token_estimate'
  | 'timestamp'
  | 'pinned'
  | (typeof MESSAGE_COLUMNS)[number]
> &
  Pick<MessageStateRow, 'session_id' | 'position' | 'active' | 'compacted' | 'compaction_id'>;

export function rowToStored(row: StoredRow): StoredMessage {
  return {
    id: row.id,
    sessionId: row.session_id,
    position: row.position,
    active: row.active,
    compacted: row.compacted,
    compactionId: row.compaction_id,
    summaryBody: row.summary_body,
    idempotencyKey: row.idempotency_key,
    tokenEstimate: row.token_estimate,
    timestamp: row.timestamp,
    pinned: row.pinned,
    message: fieldsToMessage(row),
  };
}

/** A message row with its state (`m`: messages, `s`: message_state), the tenant's only. */
export function selectWithState(tx: Kysely<Database>, tenantId: string) {
  return tx
    .selectFrom('message_state as s')
    .innerJoin('messages as m', (join) => join.onRef('m.id', '=', 's.message_id').on('m.tenant_id', '=', tenantId))
    .where('s.tenant_id', '=', tenantId);
}

/** The condition of the partial transcript index (migrations/0008), as a literal so the planner can match it. */
const ACTIVE = sql<boolean>`s.active`;

/** Every stored column of a message and its state (rowToStored reads them). */
export function selectStored(tx: Kysely<Database>, tenantId: string) {
  return selectWithState(tx, tenantId).select(STORED_COLUMNS);
}

/** The session's active rows in position order (SPEC §1.4), before the caller picks its columns. */
export function selectActiveInOrder(tx: Kysely<Database>, tenantId: string, sessionId: string) {
  return selectWithState(tx, tenantId)
    .where('s.session_id', '=', sessionId)
    .where(ACTIVE)
    .orderBy('s.position')
    .orderBy('s.message_id');
}

/** The session's active rows in position order: the transcript replayed to the model (SPEC §1.4). */
export async function selectActiveRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<StoredMessage[]> {
  return (await tx.executeQuery(activeRowsQuery(tx, tenantId, sessionId))).rows.map(rowToStored);
}

/**
 * The statement of selectActiveRows, or with `after` the session's active rows after that position, in order: what
 * was appended since a reading of the transcript. For a caller that reads its rows later (`pipelined`).
 */
export function activeRowsQuery(tx: Kysely<Database>, tenantId: string, sessionId: string, after?: number) {
  const inOrder = selectActiveInOrder(tx, tenantId, sessionId);
  return (after === undefined ? inOrder : inOrder.where('s.position', '>', after)).select(STORED_COLUMNS).compile();
}

/** The transcript: active rows in position order (SPEC §1.4). */
export function loadTranscript(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<StoredMessage[]> {
  return withTenant(db, tenantId, (tx) => selectActiveRows(tx, tenantId, sessionId), READ_ONLY);
}

/** Rows by id whatever their flags, in the order of `ids` (ids the tenant cannot see are left out). */
export async function selectRowsByIds(
  tx: Kysely<Database>,
  tenantId: string,
  ids: readonly number[],
): Promise<StoredMessage[]> {
  if (ids.length === 0) return [];
  const rows = await selectStored(tx, tenantId)
    .where(sql<boolean>`s.message_id = ANY(${[...new Set(ids)]}::bigint[])`)
    .execute();
  const byId = new Map(rows.map((row) => [row.id, rowToStored(row)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

export function loadRowsByIds(
  db: Kysely<Database>,
  tenantId: string,
  ids: readonly number[],
): Promise<StoredMessage[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return withTenant(db, tenantId, (tx) => selectRowsByIds(tx, tenantId, ids), READ_ONLY);
}

export interface ListMessagesOptions {
  /** Also rows archived by a compaction (`compacted`), as search sees them (SPEC §14.1). */
  includeArchived?: boolean;
  /** Every row of the session, superseded ones included. */
  includeInactive?: boolean;
}

/**
 * Active rows only: the transcript, in position order. With archived (or inactive) rows: the session's history in
 * insertion (id) order, each row with its flags.
 */
export function listMessages(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  options: ListMessagesOptions = {},
): Promise<StoredMessage[]> {
  if (!options.includeArchived && !options.includeInactive) return loadTranscript(db, tenantId, sessionId);
  return withTenant(db, tenantId, async (tx) => {
    // Every row of the session, whatever its state: found by messages' own session index.
    let query = selectStored(tx, tenantId).where('m.session_id', '=', sessionId);
    if (!options.includeInactive)
      query = query.where((eb) => eb.or([eb('s.active', '=', true), eb('s.compacted', '=', true)]));
    const rows = await query.orderBy('m.id').execute();
    return rows.map(rowToStored);
  });
}

/** SPEC §13.4: the summary body of the session's newest active row that has one (else null). */
export async function selectPreviousSummary(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<string | null> {
  const row = await selectWithState(tx, tenantId)
    .select('m.summary_body')
    .where('s.session_id', '=', sessionId)
    .where(ACTIVE)
    .where('m.summary_body', 'is not', null)
    .orderBy('s.position', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.summary_body ?? null;
}

export interface TranscriptTotals {
  activeMessages: number;
  activeTokens: number;
}

/** Count and summed token estimate of the session's active rows, in the caller's transaction. */
export async function selectTranscriptTotals(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<TranscriptTotals> {
  const row = await selectWithState(tx, tenantId)
    .select((eb) => [
      eb.fn.countAll<string>().as('n'),
      eb.fn.coalesce(eb.fn.sum<string>('m.token_estimate'), eb.lit(0)).as('tokens'),
    ])
    .where('s.session_id', '=', sessionId)
    .where(ACTIVE)
    .executeTakeFirstOrThrow();
  return { activeMessages: Number(row.n), activeTokens: Number(row.tokens) };
}

/** Count and summed token estimate of the session's active rows. */
export function transcriptTotals(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<TranscriptTotals> {
  return withTenant(db, tenantId, (tx) => selectTranscriptTotals(tx, tenantId, sessionId), READ_ONLY);
}

/**
 * Pins or unpins one message of a conversation (operators, SPEC §19 `rehydrate_pinned`); the message id, or null when
 * the conversation has no such message. Rare, so it stays on `messages` (a pin rewrites the row's search entries).
 */
export async function setMessagePinned(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  messageId: number,
  pinned: boolean,
): Promise<number | null> {
  const row = await withTenant(db, tenantId, (tx) =>
    tx
      .updateTable('messages')
      .set({ pinned })
      .where('tenant_id', '=', tenantId)
      .where('conversation_id', '=', conversationId)
      .where('id', '=', messageId)
      .returning('id')
      .executeTakeFirst(),
  );
  return row?.id ?? null;
}
