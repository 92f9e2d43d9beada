// Message rows: transcript reads and the batch insert shared by appends (conversationLog.ts) and the compaction
// commit (SPEC §13.1). A batch is written with one statement whatever its size (jsonb_to_recordset: one parameter).
import { type Kysely, sql } from 'kysely';
import { estimateMessageTokensRough } from '../../engine/tokens.js';
import type { ChatMessage } from '../../engine/types.js';
import { fieldsToMessage, MESSAGE_COLUMNS, messageToFields } from './messageRows.js';
import type { Database, MessageRow } from './schema.js';
import { withTenant } from './tenant.js';

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
  message: ChatMessage;
}

const STORED_COLUMNS = [
  'id',
  'session_id',
  'position',
  'active',
  'compacted',
  'compaction_id',
  'summary_body',
  'idempotency_key',
  'token_estimate',
  'timestamp',
  ...MESSAGE_COLUMNS,
] as const;

function rowToStored(row: Pick<MessageRow, (typeof STORED_COLUMNS)[number]>): StoredMessage {
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
    message: fieldsToMessage(row),
  };
}

function selectStored(tx: Kysely<Database>, tenantId: string) {
  return tx.selectFrom('messages').select(STORED_COLUMNS).where('tenant_id', '=', tenantId);
}

/** The session's active rows in position order: the transcript replayed to the model (SPEC §1.4). */
export async function selectActiveRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<StoredMessage[]> {
  const rows = await selectStored(tx, tenantId)
    .where('session_id', '=', sessionId)
    .where('active', '=', true)
    .orderBy('position')
    .orderBy('id')
    .execute();
  return rows.map(rowToStored);
}

/** One row to insert: the message plus what the row says about it. */
export interface RowToInsert {
  message: ChatMessage;
  position: number;
  idempotencyKey?: string;
  compactionId?: string;
  summaryBody?: string;
}

export interface InsertedRow {
  id: number;
  position: number;
  idempotencyKey: string | null;
  tokenEstimate: number;
}

/** Where rows go: a session and the conversation it belongs to (idempotency keys are unique per conversation). */
export interface RowTarget {
  sessionId: string;
  conversationId: string;
}

/**
 * Inserts the rows (active, not compacted, timestamp = now) in one statement; ids increase in batch order. A row
 * whose idempotency key the conversation already holds is skipped (not returned). Positions must be distinct.
 */
export async function insertMessageRows(
  tx: Kysely<Database>,
  tenantId: string,
  target: RowTarget,
  rows: readonly RowToInsert[],
): Promise<InsertedRow[]> {
  if (rows.length === 0) return [];
  // Nulls are left out: an absent key reads as SQL NULL in jsonb_to_recordset.
  const records = rows.map((row, ord) => {
    const fields = messageToFields(row.message);
    return {
      ord,
      role: fields.role,
      content: fields.content ?? undefined,
      content_parts: fields.content_parts ?? undefined,
      tool_calls: fields.tool_calls ?? undefined,
      tool_call_id: fields.tool_call_id ?? undefined,
      tool_name: fields.tool_name ?? undefined,
      extra: fields.extra ?? undefined,
      raw_message: fields.raw_message ?? undefined,
      position: row.position,
      idempotency_key: row.idempotencyKey,
      compaction_id: row.compactionId,
      summary_body: row.summaryBody,
      token_estimate: estimateMessageTokensRough(fieldsToMessage(fields)),
    };
  });
  const result = await sql<{ id: number; position: number; idempotency_key: string | null; token_estimate: number }>`
    INSERT INTO messages (tenant_id, session_id, conversation_id, role, content, content_parts, tool_calls,
                          tool_call_id, tool_name, extra, raw_message, position, idempotency_key, compaction_id,
                          summary_body, token_estimate)
    SELECT ${tenantId}, ${target.sessionId}, ${target.conversationId}, r.role, r.content, r.content_parts,
           r.tool_calls, r.tool_call_id, r.tool_name, r.extra, r.raw_message, r.position, r.idempotency_key,
           r.compaction_id, r.summary_body, r.token_estimate
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(
             ord integer, role text, content text, content_parts jsonb, tool_calls jsonb, tool_call_id text,
             tool_name text, extra jsonb, raw_message text, position integer, idempotency_key text,
             compaction_id text, summary_body text, token_estimate integer)
     ORDER BY r.ord
    ON CONFLICT (tenant_id, conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, position, idempotency_key, token_estimate`.execute(tx);
  const byPosition = new Map(result.rows.map((r) => [r.position, r]));
  const inserted: InsertedRow[] = [];
  for (const row of rows) {
    const stored = byPosition.get(row.position);
    if (!stored) continue;
    inserted.push({
      id: stored.id,
      position: stored.position,
      idempotencyKey: stored.idempotency_key,
      tokenEstimate: stored.token_estimate,
    });
  }
  return inserted;
}

/** The transcript: active rows in position order (SPEC §1.4). */
export function loadTranscript(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<StoredMessage[]> {
  return withTenant(db, tenantId, (tx) => selectActiveRows(tx, tenantId, sessionId));
}

/** Rows by id whatever their flags, in the order of `ids` (ids the tenant cannot see are left out). */
export async function loadRowsByIds(
  db: Kysely<Database>,
  tenantId: string,
  ids: readonly number[],
): Promise<StoredMessage[]> {
  if (ids.length === 0) return [];
  const rows = await withTenant(db, tenantId, (tx) =>
    selectStored(tx, tenantId)
      .where(sql<boolean>`id = ANY(${[...new Set(ids)]}::bigint[])`)
      .execute(),
  );
  const byId = new Map(rows.map((row) => [row.id, rowToStored(row)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
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
    let query = selectStored(tx, tenantId).where('session_id', '=', sessionId);
    if (!options.includeInactive)
      query = query.where((eb) => eb.or([eb('active', '=', true), eb('compacted', '=', true)]));
    const rows = await query.orderBy('id').execute();
    return rows.map(rowToStored);
  });
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
  const row = await tx
    .selectFrom('messages')
    .select((eb) => [
      eb.fn.countAll<string>().as('n'),
      eb.fn.coalesce(eb.fn.sum<string>('token_estimate'), eb.lit(0)).as('tokens'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('session_id', '=', sessionId)
    .where('active', '=', true)
    .executeTakeFirstOrThrow();
  return { activeMessages: Number(row.n), activeTokens: Number(row.tokens) };
}

/** Count and summed token estimate of the session's active rows. */
export function transcriptTotals(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<TranscriptTotals> {
  return withTenant(db, tenantId, (tx) => selectTranscriptTotals(tx, tenantId, sessionId));
}
