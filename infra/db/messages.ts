// Message rows: idempotent appends, transcript reads and the batch insert shared with the compaction commit
// (SPEC §13.1). A batch is written with one statement whatever its size (jsonb_to_recordset: one parameter).
import { type Kysely, sql } from 'kysely';
import { estimateMessageTokensRough } from '../../engine/tokens.js';
import type { ChatMessage } from '../../engine/types.js';
import { fieldsToMessage, messageToFields } from './messageRows.js';
import type { Database } from './schema.js';
import { lockSession } from './sessions.js';
import { withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

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
  'role',
  'content',
  'content_parts',
  'tool_calls',
  'tool_call_id',
  'tool_name',
  'extra',
] as const;

function rowToStored(row: {
  id: number;
  session_id: string;
  position: number;
  active: boolean;
  compacted: boolean;
  compaction_id: string | null;
  summary_body: string | null;
  idempotency_key: string | null;
  token_estimate: number;
  timestamp: Date;
  role: ChatMessage['role'];
  content: string | null;
  content_parts: unknown[] | null;
  tool_calls: unknown[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  extra: Record<string, unknown> | null;
}): StoredMessage {
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

/**
 * Inserts the rows (active, not compacted, timestamp = now) in one statement; ids increase in batch order. A row
 * whose idempotency key the session already holds is skipped (not returned). Positions must be distinct.
 */
export async function insertMessageRows(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
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
      position: row.position,
      idempotency_key: row.idempotencyKey,
      compaction_id: row.compactionId,
      summary_body: row.summaryBody,
      token_estimate: estimateMessageTokensRough(fieldsToMessage(fields)),
    };
  });
  const result = await sql<{ id: number; position: number; idempotency_key: string | null; token_estimate: number }>`
    INSERT INTO messages (tenant_id, session_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
                          extra, position, idempotency_key, compaction_id, summary_body, token_estimate)
    SELECT ${tenantId}, ${sessionId}, r.role, r.content, r.content_parts, r.tool_calls, r.tool_call_id, r.tool_name,
           r.extra, r.position, r.idempotency_key, r.compaction_id, r.summary_body, r.token_estimate
      FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS r(
             ord integer, role text, content text, content_parts jsonb, tool_calls jsonb, tool_call_id text,
             tool_name text, extra jsonb, position integer, idempotency_key text, compaction_id text,
             summary_body text, token_estimate integer)
     ORDER BY r.ord
    ON CONFLICT (tenant_id, session_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
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

export interface AppendItem {
  message: ChatMessage;
  idempotencyKey: string;
}

export interface AppendedMessage {
  id: number;
  position: number;
  idempotencyKey: string;
  tokenEstimate: number;
}

export interface AppendResult {
  appended: AppendedMessage[];
  /** Keys already stored for the session (or repeated within the batch): those items were skipped. */
  duplicates: string[];
}

async function appendState(tx: Kysely<Database>, tenantId: string, sessionId: string, keys: readonly string[]) {
  const result = await sql<{ max_position: number | null; existing: string[] }>`
    SELECT
      (SELECT max(position) FROM messages
        WHERE tenant_id = ${tenantId} AND session_id = ${sessionId} AND active) AS max_position,
      ARRAY(SELECT idempotency_key FROM messages
             WHERE tenant_id = ${tenantId} AND session_id = ${sessionId}
               AND idempotency_key = ANY(${keys}::text[])) AS existing`.execute(tx);
  const row = result.rows[0];
  return { nextPosition: (row?.max_position ?? -1) + 1, existing: new Set(row?.existing ?? []) };
}

/**
 * Appends the batch in one transaction: positions continue after the highest active position, in batch order;
 * an item whose key the session already holds is skipped and reported, so retrying the same call is a no-op.
 */
export async function appendMessages(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  items: readonly AppendItem[],
): Promise<AppendResult> {
  for (const item of items) {
    if (typeof item.idempotencyKey !== 'string' || item.idempotencyKey === '') {
      throw new TypeError('appendMessages: every item needs a non-empty idempotencyKey');
    }
  }
  return withTenantWrite(db, tenantId, async (tx) => {
    // The lock is its own statement so the read below takes a snapshot after any append it waited for.
    await lockSession(tx, tenantId, sessionId);
    const state = await appendState(
      tx,
      tenantId,
      sessionId,
      items.map((i) => i.idempotencyKey),
    );
    const duplicates: string[] = [];
    const fresh: RowToInsert[] = [];
    const seen = new Set<string>();
    for (const item of items) {
      if (state.existing.has(item.idempotencyKey) || seen.has(item.idempotencyKey)) {
        duplicates.push(item.idempotencyKey);
        continue;
      }
      seen.add(item.idempotencyKey);
      fresh.push({
        message: item.message,
        idempotencyKey: item.idempotencyKey,
        position: state.nextPosition + fresh.length,
      });
    }
    const inserted = await insertMessageRows(tx, tenantId, sessionId, fresh);
    const appended = inserted.map((row) => ({ ...row, idempotencyKey: row.idempotencyKey as string }));
    return { appended, duplicates };
  });
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

/** Count and summed token estimate of the session's active rows (the workflow's running totals). */
export async function transcriptTotals(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<TranscriptTotals> {
  const row = await withTenant(db, tenantId, (tx) =>
    tx
      .selectFrom('messages')
      .select((eb) => [
        eb.fn.countAll<string>().as('n'),
        eb.fn.coalesce(eb.fn.sum<string>('token_estimate'), eb.lit(0)).as('tokens'),
      ])
      .where('session_id', '=', sessionId)
      .where('active', '=', true)
      .executeTakeFirstOrThrow(),
  );
  return { activeMessages: Number(row.n), activeTokens: Number(row.tokens) };
}
