// What an append reads before it writes (conversationAppend.ts), under its conversation's lock: the keys the
// conversation holds already, the session's next position and fresh message ids, in one statement after the lock.
// Queued (`pipelined`), several appends' reads travel in one flight (appendGroups.ts).
import { type Kysely, sql } from 'kysely';
import { lockedHeadQuery } from './conversationHead.js';
import { drawMessageIds } from './messageInsert.js';
import type { MessageColumns } from './messageRows.js';
import { pipelined } from './queuedStatements.js';
import type { ConversationRow, Database } from './schema.js';
import type { TenantTx } from './tenant.js';

type StoredKeyRow = MessageColumns & { idempotency_key: string | null };

/** What an append reads before it writes: the keys the conversation holds already, the next position, fresh ids. */
export interface AppendState {
  /** The session the position was read from. */
  sessionId: string | null;
  nextPosition: number;
  stored: Map<string, StoredKeyRow>;
  /** One id per item, increasing (`drawMessageIds`). */
  ids: number[];
}

/**
 * The session's next position, the conversation's rows that already hold any of the keys, and an id for each item,
 * in one statement: the stored rows, then one row (no key) carrying the rest. The session is `sessionId`, or the
 * conversation's current one (read by this statement: under the conversation's lock, the locked row's).
 */
function appendStateQuery(
  tx: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  sessionId: string | null,
  keys: readonly string[],
) {
  // Written so that the plan does not depend on the statistics (a table that grew since its last ANALYZE had the
  // key filtered over every row of the conversation and every active position read): each key is one probe of the
  // unique index on all three columns (a LATERAL with LIMIT is never flattened into a join, which a generic plan made
  // on an empty table ran as a scan of the conversation's keys), the highest position one step back along the
  // transcript index. The session is compared with the target's column read as a value of its own (a scalar subquery
  // over the CTE): compared with the COALESCE itself, the session was never an index condition, and each append read
  // every active row of the tenant (by the tenant's index entries, or all of message_state once analysed).
  return sql<StateRow>`
    WITH target AS (
      SELECT coalesce(${sessionId}::text,
                      (SELECT current_session_id FROM conversations
                        WHERE tenant_id = ${tenantId} AND id = ${conversationId})) AS session_id)
    SELECT m.idempotency_key, m.role, m.content, m.content_parts, m.tool_calls, m.tool_call_id, m.tool_name, m.extra,
           m.raw_message, NULL::text AS session_id, NULL::integer AS max_position, NULL::bigint[] AS ids
      FROM unnest(${keys}::text[]) AS k(key)
     CROSS JOIN LATERAL (
           SELECT * FROM messages
            WHERE tenant_id = ${tenantId} AND conversation_id = ${conversationId} AND idempotency_key = k.key
            LIMIT 1) AS m
    UNION ALL
    SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, target.session_id,
           (SELECT position FROM message_state
             WHERE tenant_id = ${tenantId} AND session_id = (SELECT session_id FROM target) AND active
             ORDER BY position DESC LIMIT 1),
           ${drawMessageIds(keys.length)}
      FROM target`.compile(tx);
}

type StateRow = StoredKeyRow & { session_id: string | null; max_position: number | null; ids: string[] | null };

/** The rows of `appendStateQuery`, read. */
function appendStateOf(rows: readonly StateRow[]): AppendState {
  const state: AppendState = { sessionId: null, nextPosition: 0, stored: new Map(), ids: [] };
  for (const row of rows) {
    if (row.idempotency_key !== null) {
      state.stored.set(row.idempotency_key, row);
      continue;
    }
    state.sessionId = row.session_id;
    state.nextPosition = (row.max_position ?? -1) + 1;
    // bigint[] reads as text (connect.ts parses only a single int8 as a number).
    state.ids = (row.ids ?? []).map(Number);
  }
  return state;
}

/** `appendStateQuery`, run now. */
export async function appendState(
  tx: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  sessionId: string | null,
  keys: readonly string[],
): Promise<AppendState> {
  return appendStateOf((await tx.executeQuery(appendStateQuery(tx, tenantId, conversationId, sessionId, keys))).rows);
}

/** An append's first reads: its conversation's row as locked (none: see `headByTwoLocks`), then its keys' state. */
export interface AppendReads {
  head: () => Promise<ConversationRow | undefined>;
  state: () => Promise<AppendState>;
}

/**
 * An append's first statements: the lock of its conversation (and current session), then the read of the keys it
 * holds and the next position, its own statement so that it runs once the lock is granted and sees what was committed
 * before. Both are queued (`pipelined`) to travel with the transaction's next statement; `send`: the read runs now,
 * and everything queued before it travels in its flight (several appends' reads in one flight: appendGroups.ts).
 * Read the results once they were sent.
 */
export async function queueAppendReads(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  keys: readonly string[],
  send: boolean,
): Promise<AppendReads> {
  const lock = await pipelined(tx, lockedHeadQuery(tenantId, conversationId));
  const head = async () => (await lock.result).rows[0];
  const query = appendStateQuery(tx, tenantId, conversationId, null, keys);
  if (send) {
    const { rows } = await tx.executeQuery(query);
    return { head, state: async () => appendStateOf(rows) };
  }
  const read = await pipelined(tx, query);
  return { head, state: async () => appendStateOf((await read.result).rows) };
}
