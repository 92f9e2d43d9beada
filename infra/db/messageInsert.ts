// The batch insert of message rows shared by appends (conversationAppend.ts) and the compaction commit (SPEC §13.1):
// one statement whatever the batch's size (jsonb_to_recordset: one parameter), writing both halves of each row — the
// message (`messages`, its text and search columns, written once) and its state (`message_state`, migrations/0008).
import { type Kysely, sql } from 'kysely';
import { estimateMessageTokensRough } from '../../engine/tokens.js';
import type { ChatMessage } from '../../engine/types.js';
import { fieldsToMessage, messageToFields } from './messageRows.js';
import { pipelined } from './queuedStatements.js';
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

/** A row whose id was drawn beforehand (`drawMessageIds`, conversationAppend.ts). */
export type RowWithId = RowToInsert & { id: number };

/** The rows as the insert's one parameter takes them, with what each row's token estimate will be. */
function rowRecords(rows: readonly RowToInsert[]) {
  // Nulls are left out: an absent key reads as SQL NULL in jsonb_to_recordset.
  return rows.map((row, ord) => {
    const fields = messageToFields(row.message);
    return {
      ord,
      given_id: (row as Partial<RowWithId>).id,
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

/**
 * The insert of both halves of the rows, in one statement. Ids are drawn in batch order (`drawn`), or given; a row
 * whose idempotency key the conversation already holds is skipped (`drawn`: it gets no state row, its id is left
 * unused) or fails the statement (given ids: the writer knew every key was new).
 */
function insertStatement(tenantId: string, target: RowTarget, records: ReturnType<typeof rowRecords>, drawn: boolean) {
  const id = drawn ? sql`nextval('messages_id_seq')` : sql`r.given_id`;
  const onConflict = drawn
    ? sql`ON CONFLICT (tenant_id, conversation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`
    : sql``;
  return sql<{ id: number; position: number; idempotency_key: string | null; token_estimate: number }>`
    WITH r AS MATERIALIZED (
      SELECT ${id} AS id, r.*
        FROM (SELECT * FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(
                ord integer, given_id bigint, role text, content text, content_parts jsonb, tool_calls jsonb,
                tool_call_id text, tool_name text, extra jsonb, raw_message text, position integer,
                idempotency_key text, compaction_id text, summary_body text, token_estimate integer, pinned boolean)
               ORDER BY r.ord) AS r),
    ins AS (
      INSERT INTO messages (id, tenant_id, session_id, conversation_id, role, content, content_parts, tool_calls,
                            tool_call_id, tool_name, extra, raw_message, idempotency_key, summary_body, token_estimate,
                            pinned)
      OVERRIDING SYSTEM VALUE
      SELECT r.id, ${tenantId}, ${target.sessionId}, ${target.conversationId}, r.role, r.content, r.content_parts,
             r.tool_calls, r.tool_call_id, r.tool_name, r.extra, r.raw_message, r.idempotency_key, r.summary_body,
             r.token_estimate, coalesce(r.pinned, false)
        FROM r
       ORDER BY r.id
      ${onConflict}
      RETURNING id, idempotency_key, token_estimate),
    state AS (
      INSERT INTO message_state (tenant_id, message_id, session_id, position, compaction_id)
      SELECT ${tenantId}, r.id, ${target.sessionId}, r.position, r.compaction_id
        FROM ins JOIN r ON r.id = ins.id
       ORDER BY r.id)
    SELECT ins.id, r.position, ins.idempotency_key, ins.token_estimate
      FROM ins JOIN r ON r.id = ins.id
     ORDER BY ins.id`;
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
  const result = await insertStatement(tenantId, target, rowRecords(rows), true).execute(tx);
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

/**
 * Queues the insert of rows whose ids were drawn and whose keys the conversation does not hold (checked under its
 * lock): it travels in the flight of the transaction's next statement or its COMMIT (`pipelined`), and fails the
 * transaction if a key is held after all. What the rows will be is known now, and returned.
 */
export async function queueKnownRows(
  tx: Kysely<Database>,
  tenantId: string,
  target: RowTarget,
  rows: readonly RowWithId[],
): Promise<InsertedRow[]> {
  if (rows.length === 0) return [];
  const records = rowRecords(rows);
  await pipelined(tx, insertStatement(tenantId, target, records, false).compile(tx));
  return records.map((record, i) => ({
    id: rows[i]!.id,
    position: record.position,
    idempotencyKey: record.idempotency_key ?? null,
    tokenEstimate: record.token_estimate,
  }));
}

/** `count` message ids, in increasing order, for rows a writer will insert under its conversation's lock. */
export const drawMessageIds = (count: number) =>
  sql<string[]>`ARRAY(SELECT nextval('messages_id_seq') FROM generate_series(1, ${count}::integer))`;
