// Appending to the conversation log (DESIGN.md §3, issue #9 §1 and §7): one tenant-scoped transaction per batch,
// retried as a whole (SPEC §13.6). Idempotency keys are unique per conversation: a key already stored with the same
// message is a duplicate (skipped, reported), with a different message the whole batch is refused
// (IdempotencyConflictError). Positions continue after the last active row of the session, in batch order.
import { type Kysely, sql, type UpdateObject } from 'kysely';
import { canonicalJson } from '../../engine/commit/messageKeys.js';
import type { ChatMessage } from '../../engine/types.js';
import {
  addToTotals,
  explainMissingHead,
  insertAndAddToTotals,
  type LogTotals,
  lockConversation,
  lockedHeadQuery,
  totalsAfterAppend,
  totalsOf,
} from './conversations.js';
import {
  type InsertedRow,
  insertMessageRows,
  type RowsWithIds,
  type RowTarget,
  rowsToInsert,
} from './messageInsert.js';
import { fieldsToMessage, type MessageColumns, toStoredMessage } from './messageRows.js';
import { inOneFlight } from './pipelinedTransactions.js';
import type { ConversationRow, Database } from './schema.js';
import { lockSession } from './sessions.js';
import { IdempotencyConflictError, SessionNotFoundError } from './storeErrors.js';
import type { TenantTx } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

export interface AppendItem {
  message: ChatMessage;
  idempotencyKey: string;
}

export interface AppendedMessage {
  id: number;
  position: number;
  idempotencyKey: string;
  tokenEstimate: number;
  role: ChatMessage['role'];
}

export interface AppendResult {
  /** The fresh rows, in batch order. */
  appended: AppendedMessage[];
  /** Keys the conversation already held with the same message: those items were skipped. */
  duplicates: string[];
  sessionId: string;
  conversationId: string;
  /** The conversation's totals after the batch (null: the session has no conversation record). */
  totals: LogTotals | null;
  /** The conversation's row as the batch's statement wrote it (appendToConversation, fresh rows only). */
  written?: ConversationRow;
  /** `after` did not hold: the batch's new items were not stored (appendToConversation). */
  stale?: boolean;
}

type StoredKeyRow = MessageColumns & { idempotency_key: string | null };

function validateItems(items: readonly AppendItem[]): void {
  for (const item of items) {
    if (typeof item.idempotencyKey !== 'string' || item.idempotencyKey === '') {
      throw new TypeError('append: every item needs a non-empty idempotencyKey');
    }
  }
}

/** Where an append's rows go: a session, or the conversation's current session as its locked row names it. */
type AppendTarget = RowTarget | { conversationId: string; sessionId?: undefined };

/**
 * The session's next position, the conversation's rows that already hold any of the keys and `draw` fresh message
 * ids, in one statement: the stored rows, one row (no key) carrying the session's highest active position, then one
 * row per id. Without a session, the conversation's current one: the statement must follow the one that locked the
 * conversation (it then reads what was committed before the lock was granted).
 */
function appendStateQuery(
  tx: Kysely<Database>,
  tenantId: string,
  target: AppendTarget,
  keys: readonly string[],
  draw: number,
) {
  // Written so that the plan does not depend on the statistics (a table that grew since its last ANALYZE had the
  // key filtered over every row of the conversation and every active position read): each key is one probe of the
  // unique index, the highest position one step back along the transcript index.
  const session =
    target.sessionId ??
    sql`(SELECT current_session_id FROM conversations WHERE tenant_id = ${tenantId} AND id = ${target.conversationId})`;
  return sql<StoredKeyRow & { max_position: number | null; new_id: number | null }>`
    SELECT m.idempotency_key, m.role, m.content, m.content_parts, m.tool_calls, m.tool_call_id, m.tool_name, m.extra,
           m.raw_message, NULL::integer AS max_position, NULL::bigint AS new_id
      FROM unnest(${keys}::text[]) AS k(key)
      JOIN messages m
        ON m.tenant_id = ${tenantId} AND m.conversation_id = ${target.conversationId} AND m.idempotency_key = k.key
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           (SELECT position FROM message_state
             WHERE tenant_id = ${tenantId} AND session_id = ${session} AND active
             ORDER BY position DESC LIMIT 1), NULL
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, nextval('messages_id_seq')
      FROM generate_series(1, ${draw}::integer)`.compile(tx);
}

interface AppendState {
  nextPosition: number;
  stored: Map<string, StoredKeyRow>;
  /** Fresh message ids, increasing. */
  ids: number[];
}

function readAppendState(rows: ReadonlyArray<StoredKeyRow & { max_position: number | null; new_id: number | null }>) {
  const state: AppendState = { nextPosition: 0, stored: new Map(), ids: [] };
  let maxPosition: number | null = null;
  for (const row of rows) {
    if (row.new_id !== null) state.ids.push(Number(row.new_id));
    else if (row.idempotency_key === null) maxPosition = row.max_position;
    else state.stored.set(row.idempotency_key, row);
  }
  state.nextPosition = (maxPosition ?? -1) + 1;
  state.ids.sort((x, y) => x - y);
  return state;
}

/** The batch against the conversation's keys: duplicates (skipped), conflicts (thrown), the fresh items' positions. */
function planAppend(
  state: AppendState,
  items: readonly AppendItem[],
  /** The batch must follow the message of this key, the conversation's `last_key` now (`head`): else `stale`. */
  follows?: { after: string; head: string | null },
): { fresh: Array<AppendItem & { position: number }>; duplicates: string[]; stale: boolean } {
  const duplicates: string[] = [];
  const fresh: Array<AppendItem & { position: number }> = [];
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const stored = state.stored.get(item.idempotencyKey);
    if (stored) {
      if (canonicalJson(fieldsToMessage(stored)) !== canonicalJson(toStoredMessage(item.message))) {
        throw new IdempotencyConflictError(item.idempotencyKey, index);
      }
      duplicates.push(item.idempotencyKey);
      return;
    }
    if (seen.has(item.idempotencyKey)) {
      duplicates.push(item.idempotencyKey);
      return;
    }
    seen.add(item.idempotencyKey);
    fresh.push({ ...item, position: state.nextPosition + fresh.length });
  });
  // Placed only right after the message it follows: when anything else was stored since, the fresh items are not.
  if (follows && fresh.length > 0 && follows.head !== follows.after) return { fresh: [], duplicates, stale: true };
  return { fresh, duplicates, stale: false };
}

const appendedOf = (inserted: readonly InsertedRow[], fresh: ReadonlyArray<AppendItem>): AppendedMessage[] => {
  const roles = new Map(fresh.map((f) => [f.idempotencyKey, f.message.role]));
  return inserted.map((row) => ({
    id: row.id,
    position: row.position,
    idempotencyKey: row.idempotencyKey as string,
    tokenEstimate: row.tokenEstimate,
    role: roles.get(row.idempotencyKey as string) ?? 'user',
  }));
};

/** Appends to a locked session: dedup and conflicts against the conversation's keys, then one insert. */
async function appendLocked(
  tx: TenantTx,
  tenantId: string,
  target: RowTarget,
  items: readonly AppendItem[],
): Promise<{ appended: AppendedMessage[]; duplicates: string[] }> {
  const keys = items.map((i) => i.idempotencyKey);
  const { rows } = await tx.executeQuery(appendStateQuery(tx, tenantId, target, keys, 0));
  const { fresh, duplicates } = planAppend(readAppendState(rows), items);
  const inserted = await insertMessageRows(tx, tenantId, target, fresh);
  return { appended: appendedOf(inserted, fresh), duplicates };
}

/** The key `last_key` takes after the rows (the last keyed one), or nothing to set. */
const lastKeyOf = (rows: readonly AppendedMessage[]) => {
  const key = rows.findLast((row) => row.idempotencyKey)?.idempotencyKey;
  return key ? { last_key: key } : {};
};

export interface AppendOptions {
  /**
   * Columns of the conversation's row to set in the statement that adds the batch to its totals, from the row as it
   * was locked and the append's result (its totals as they will be).
   */
  settle?: (result: AppendResult, head: ConversationRow) => UpdateObject<Database, 'conversations'> | null;
  within?: (tx: TenantTx, result: AppendResult) => Promise<void>;
  /**
   * The idempotency key of the message the batch must follow: unless it is the conversation's newest keyed message
   * (`last_key`), the batch's new items are not stored (`stale`); its duplicates are reported as usual.
   */
  after?: string;
}

const tokensOf = (rows: readonly AppendedMessage[]) => rows.reduce((sum, r) => sum + r.tokenEstimate, 0);

/**
 * The conversation log's append (gateway, chat turns): the batch goes to the conversation's current session.
 * `within` runs further writes in the same transaction (e.g. the turn record of a model reply).
 */
export async function appendToConversation(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  items: readonly AppendItem[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  validateItems(items);
  const keys = items.map((i) => i.idempotencyKey);
  return withTenantWrite(db, tenantId, async (tx) => {
    // One flight: the lock, then (with its own snapshot, once the lock is granted) the keys, the next position and
    // the ids of the fresh rows. The rows are then inserted by the statement that adds them to the totals.
    const [locked, read] = await inOneFlight(tx, [
      lockedHeadQuery(tx, tenantId, conversationId).compile(),
      appendStateQuery(tx, tenantId, { conversationId }, keys, items.length),
    ]);
    const conversation =
      (locked!.rows[0] as ConversationRow | undefined) ?? (await explainMissingHead(tx, tenantId, conversationId));
    const target = { sessionId: conversation.current_session_id, conversationId };
    const follows = options.after !== undefined ? { after: options.after, head: conversation.last_key } : undefined;
    const state = readAppendState(read!.rows as Parameters<typeof readAppendState>[0]);
    const { fresh, duplicates, stale } = planAppend(state, items, follows);
    const rows: RowsWithIds = { target, rows: fresh, ids: state.ids.slice(0, fresh.length) };
    const appended = appendedOf(rowsToInsert(rows), fresh);
    const delta = { messages: appended.length, tokens: tokensOf(appended) };
    const isFresh = appended.length > 0;
    // Under the row's lock the totals after the batch are known before the statement that writes them.
    const result: AppendResult = {
      appended,
      duplicates,
      ...(stale ? { stale } : {}),
      ...target,
      totals: isFresh ? totalsAfterAppend(conversation, delta) : totalsOf(conversation),
    };
    const extra = options.settle?.(result, conversation) ?? null;
    if (isFresh) {
      const written = await insertAndAddToTotals(tx, tenantId, conversationId, rows, delta, {
        ...extra,
        ...lastKeyOf(appended),
      });
      if (written.version !== result.totals?.version || written.batchSeq !== result.totals.batchSeq) {
        throw new Error(`conversation ${conversationId}: totals moved under its lock`);
      }
      result.written = written.row;
    } else if (extra) {
      await tx
        .updateTable('conversations')
        .set(extra)
        .where('tenant_id', '=', tenantId)
        .where('id', '=', conversationId)
        .execute();
    }
    if (options.within) await options.within(tx, result);
    return result;
  });
}

/**
 * Appends to one session (the store's own API, e.g. seeding a session): its conversation record, when it has one
 * and points at this session, is updated like a conversation append.
 */
export async function appendMessages(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  items: readonly AppendItem[],
): Promise<AppendResult> {
  validateItems(items);
  return withTenantWrite(db, tenantId, async (tx) => {
    const found = await tx
      .selectFrom('sessions')
      .select('conversation_id')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId)
      .executeTakeFirst();
    if (!found) throw new SessionNotFoundError(sessionId);
    const conversation = await lockConversation(tx, tenantId, found.conversation_id);
    await lockSession(tx, tenantId, sessionId);
    const target = { sessionId, conversationId: found.conversation_id };
    const { appended, duplicates } = await appendLocked(tx, tenantId, target, items);
    const current = conversation?.current_session_id === sessionId ? conversation : undefined;
    let totals: LogTotals | null = current ? totalsOf(current) : null;
    if (current && appended.length > 0) {
      const delta = { messages: appended.length, tokens: tokensOf(appended) };
      totals = totalsOf((await addToTotals(tx, tenantId, current.id, delta, lastKeyOf(appended))).row);
    }
    return { appended, duplicates, ...target, totals };
  });
}
