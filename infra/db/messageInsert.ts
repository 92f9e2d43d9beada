// The batch insert of message rows shared by appends (conversationAppend.ts) and the compaction commit (SPEC §13.1):
// one statement whatever the batch's size (jsonb_to_recordset: one parameter), writing both halves of each row — the
// message (`messages`, its text and search columns, written once) and its state (`message_state`, migrations/0008).
// An append draws its ids with its read and inserts its rows in the statement that adds them to the conversation's
// totals (withRowsInserted; issue #11: round trips per batch).
import { type Kysely, type QueryCreator, sql } from 'kysely';
import { estimateMessageTokensRough } from '../../engine/tokens.js';
import type { ChatMessage } from '../../engine/types.js';
import { fieldsToMessage, messageToFields } from './messageRows.js';
import type { Database } from './schema.js';

/** One row to insert: the message plus what the row says about it. */
export interface RowToInsert {
  message: ChatMessage;
  position: number;
  idempotencyKey?: string;
  compactionId?: string;
  summaryBody?: string;
  /** Pinned by an operator (a rotation's copy of a pinned row); default false. */
  pinned?: boolean;
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

/** A row as the insert statements read it (jsonb_to_recordset); nulls are left out (an absent key reads as NULL). */
interface RowRecord {
  id?: number;
  ord: number;
  role: string;
  content?: string;
  content_parts?: unknown;
  tool_calls?: unknown;
  tool_call_id?: string;
  tool_name?: string;
  extra?: unknown;
  raw_message?: string;
  position: number;
  idempotency_key?: string;
  compaction_id?: string;
  summary_body?: string;
  token_estimate: number;
  pinned?: true;
}

function toRecords(rows: readonly RowToInsert[], ids?: readonly number[]): RowRecord[] {
  return rows.map((row, ord) => {
    const fields = messageToFields(row.message);
    return {
      ...(ids ? { id: ids[ord]! } : {}),
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
      pinned: row.pinned === true ? true : undefined,
    };
  });
}

/** The columns of a row record (jsonb_to_recordset's column list, after the id when there is one). */
const RECORD_COLUMNS = sql.raw(`ord integer, role text, content text, content_parts jsonb, tool_calls jsonb,
                tool_call_id text, tool_name text, extra jsonb, raw_message text, position integer, idempotency_key text,
                compaction_id text, summary_body text, token_estimate integer, pinned boolean`);

/** The message half of the rows in `r` (a CTE with an id each): a row whose key the conversation holds is skipped. */
function insertMessagesOf(tenantId: string, target: RowTarget) {
  return sql`
      INSERT INTO messages (id, tenant_id, session_id, conversation_id, role, content, content_parts, tool_calls,
                            tool_call_id, tool_name, extra, raw_message, idempotency_key, summary_body, token_estimate,
                            pinned)
      OVERRIDING SYSTEM VALUE
      SELECT r.id, ${tenantId}, ${target.sessionId}, ${target.conversationId}, r.role, r.content, r.content_parts,
             r.tool_calls, r.tool_call_id, r.tool_name, r.extra, r.raw_message, r.idempotency_key, r.summary_body,
             r.token_estimate, coalesce(r.pinned, false)
        FROM r
       ORDER BY r.id
      ON CONFLICT (tenant_id, conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING id, idempotency_key, token_estimate`;
}

/** The state half of the rows `ins` inserted (those of `r` not skipped). */
function insertStatesOf(tenantId: string, target: RowTarget) {
  return sql`
      INSERT INTO message_state (tenant_id, message_id, session_id, position, compaction_id)
      SELECT ${tenantId}, r.id, ${target.sessionId}, r.position, r.compaction_id
        FROM ins JOIN r ON r.id = ins.id
       ORDER BY r.id`;
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
  const records = toRecords(rows);
  // The ids are drawn first (in batch order) so that the state rows of the same statement can name them; a row
  // skipped for its idempotency key gets no state row (its id is left unused).
  const result = await sql<{ id: number; position: number; idempotency_key: string | null; token_estimate: number }>`
    WITH r AS MATERIALIZED (
      SELECT nextval('messages_id_seq') AS id, r.*
        FROM (SELECT * FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(${RECORD_COLUMNS})
               ORDER BY r.ord) AS r),
    ins AS (${insertMessagesOf(tenantId, target)}),
    state AS (${insertStatesOf(tenantId, target)})
    SELECT ins.id, r.position, ins.idempotency_key, ins.token_estimate
      FROM ins JOIN r ON r.id = ins.id
     ORDER BY ins.id`.execute(tx);
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

/** Rows whose ids were drawn beforehand (e.g. with the append's read), to insert with another statement. */
export interface RowsWithIds {
  target: RowTarget;
  rows: readonly RowToInsert[];
  /** One per row, increasing (drawn from messages_id_seq in batch order). */
  ids: readonly number[];
}

/** What such rows will be once inserted: known before the statement that inserts them. */
export function rowsToInsert(rows: RowsWithIds): InsertedRow[] {
  return toRecords(rows.rows, rows.ids).map((record) => ({
    id: record.id!,
    position: record.position,
    idempotencyKey: record.idempotency_key ?? null,
    tokenEstimate: record.token_estimate,
  }));
}

/**
 * The rows as common table expressions of another statement (`r`, `ins`, `state`: both halves of each row), so that
 * the statement that writes what they change — the conversation's totals — inserts them too: one round trip. `ins`
 * holds the rows inserted (a row whose key the conversation holds is skipped, as by insertMessageRows).
 */
export function withRowsInserted(tx: Kysely<Database>, tenantId: string, rows: RowsWithIds): QueryCreator<Database> {
  const records = toRecords(rows.rows, rows.ids);
  return tx
    .with(
      'r',
      () =>
        sql`(SELECT * FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(id bigint, ${RECORD_COLUMNS}))`,
    )
    .with('ins', () => sql`(${insertMessagesOf(tenantId, rows.target)})`)
    .with('state', () => sql`(${insertStatesOf(tenantId, rows.target)})`) as unknown as QueryCreator<Database>;
}
