// The head of a conversation's log under its write lock (DESIGN.md §3): the locks every log writer takes first
// (conversation, then session), and the running totals each change of the transcript writes under them — `version`
// bumped by every change, `batch_seq` by every accepted batch. The conversation records themselves, and what the
// workflow publishes on them, are conversations.ts.
import { CompiledQuery, type Kysely, sql, type UpdateObject } from 'kysely';
import { conversationQuery } from './conversations.js';
import type { ConversationRow, Database } from './schema.js';
import { lockSession } from './sessions.js';
import { ConversationNotFoundError } from './storeErrors.js';
import type { TenantTx } from './tenant.js';

/** The totals of the live transcript at a version of the conversation, and the batches accepted by then. */
export interface LogTotals {
  version: number;
  batchSeq: number;
  activeMessages: number;
  activeTokens: number;
}

/** Takes the conversation's write lock for the rest of the transaction (first lock of every log writer). */
export async function lockConversation(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
): Promise<ConversationRow | undefined> {
  return conversationQuery(tx, tenantId, conversationId).forNoKeyUpdate().executeTakeFirst();
}

export async function requireLockedConversation(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
): Promise<ConversationRow> {
  const row = await lockConversation(tx, tenantId, conversationId);
  if (!row) throw new ConversationNotFoundError(conversationId);
  return row;
}

/**
 * The statement of requireLockedHead: the conversation and its current session locked in one statement — rows are
 * locked in the order of the FROM list, so the lock order of every writer (conversation, then session) holds — and
 * the conversation's row read. No row: `headByTwoLocks`. Its text is fixed: every append runs it, and building it
 * with kysely's query builder cost ~40 µs of the gateway's CPU per batch (issue #11).
 */
export const lockedHeadQuery = (tenantId: string, conversationId: string) =>
  CompiledQuery.raw(LOCKED_HEAD, [tenantId, conversationId]) as CompiledQuery<ConversationRow>;

const LOCKED_HEAD = `SELECT c.* FROM conversations AS c
  JOIN sessions AS s ON s.tenant_id = c.tenant_id AND s.id = c.current_session_id
 WHERE c.tenant_id = $1 AND c.id = $2
   FOR NO KEY UPDATE`;

/**
 * When `lockedHeadQuery` found no row, the same locks in two steps: throws ConversationNotFoundError, or
 * SessionNotFoundError when the current session is missing; or returns the row (a rotation that committed while the
 * statement waited for the lock can leave its join without a row).
 */
export async function headByTwoLocks(tx: TenantTx, tenantId: string, conversationId: string): Promise<ConversationRow> {
  const conversation = await requireLockedConversation(tx, tenantId, conversationId);
  await lockSession(tx, tenantId, conversation.current_session_id);
  return conversation;
}

/**
 * Locks the conversation and its current session (`lockedHeadQuery`) and returns the conversation's row.
 * Throws ConversationNotFoundError, or SessionNotFoundError when its current session is missing.
 */
export async function requireLockedHead(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
): Promise<ConversationRow> {
  const { rows } = await tx.executeQuery(lockedHeadQuery(tenantId, conversationId));
  return rows[0] ?? headByTwoLocks(tx, tenantId, conversationId);
}

/** The totals after a change of the locked head, and its row as written. */
export type WrittenTotals = LogTotals & { row: ConversationRow };

/** The update of the locked conversation's head that bumps its version. */
const bumpQuery = (
  tx: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  set: UpdateObject<Database, 'conversations'>,
) =>
  tx
    .updateTable('conversations')
    .set({ ...set, version: sql`version + 1`, updated_at: sql`now()` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', conversationId);

/** Updates the locked conversation's head and bumps its version; returns the totals after, and the row. */
async function bump(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  set: UpdateObject<Database, 'conversations'>,
): Promise<WrittenTotals> {
  const row = await bumpQuery(tx, tenantId, conversationId, set).returningAll().executeTakeFirstOrThrow();
  return { ...totalsOf(row), row };
}

/** The totals addToTotals will write for a batch appended to the locked row `head` (known before it writes them). */
export const totalsAfterAppend = (head: ConversationRow, delta: { messages: number; tokens: number }): LogTotals => ({
  version: head.version + 1,
  batchSeq: head.batch_seq + 1,
  activeMessages: head.active_messages + delta.messages,
  activeTokens: head.active_tokens + delta.tokens,
});

/** The columns an append sets: the batch added to the totals and counted, and `extra`. */
const totalsSet = (
  delta: { messages: number; tokens: number },
  extra: UpdateObject<Database, 'conversations'>,
): UpdateObject<Database, 'conversations'> => ({
  ...extra,
  batch_seq: sql`batch_seq + 1`,
  active_messages: sql`active_messages + ${delta.messages}`,
  active_tokens: sql`active_tokens + ${delta.tokens}`,
});

/** After an append: add the rows to the totals, count the batch, bump the version. The conversation must be locked. */
export function addToTotals(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  delta: { messages: number; tokens: number },
  /** Further columns set by the same statement (the notification decision, infra/db/quietBatches.ts). */
  extra: UpdateObject<Database, 'conversations'> = {},
): Promise<WrittenTotals> {
  return bump(tx, tenantId, conversationId, totalsSet(delta, extra));
}

/**
 * addToTotals' statement, to send later (`pipelined`): it returns the conversation's row as written (`row`), or only
 * what checks the totals it wrote (fewer columns to send and parse on every append).
 */
export const addToTotalsQuery = (
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  delta: { messages: number; tokens: number },
  extra: UpdateObject<Database, 'conversations'>,
  returning: 'row' | 'totals',
) => {
  const update = bumpQuery(tx, tenantId, conversationId, totalsSet(delta, extra));
  return returning === 'row' ? update.returningAll().compile() : update.returning(['version', 'batch_seq']).compile();
};
/**
 * After a compaction commit or a replay swap: the new totals (and session), version bumped. Must be locked. The
 * workflow's quiet rules were published for the transcript before the swap: void until it publishes again — unless
 * `compaction` is the commit of the background compaction those current rules were published for, to be folded
 * until its settlement (engine/quietBatches.ts `foldsAtSettle`): they judge conservatively after the swap too (its
 * reading is the pre-swap one), and the workflow applies what they fold before the outcome, as it would the same
 * batches notified before the child's completion reached it.
 */
export async function setTotals(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  totals: { activeMessages: number; activeTokens: number; currentSessionId?: string },
  options: { compaction?: boolean } = {},
): Promise<LogTotals> {
  const folding = options.compaction
    ? sql<boolean>`(quiet_rules->>'foldsAtSettle')::boolean IS TRUE AND (quiet_rules->>'epoch')::bigint = notify_epoch`
    : sql<boolean>`false`;
  const written = await bump(tx, tenantId, conversationId, {
    active_messages: totals.activeMessages,
    active_tokens: totals.activeTokens,
    notify_epoch: sql`CASE WHEN ${folding} THEN notify_epoch ELSE notify_epoch + 1 END`,
    notified_since: sql`CASE WHEN ${folding} THEN notified_since ELSE NULL END`,
    ...(totals.currentSessionId ? { current_session_id: totals.currentSessionId } : {}),
  });
  return totalsOf(written.row);
}

/**
 * How often the transcript changed other than by an append (compaction commits, replays, rotations): an append bumps
 * `version` and `batch_seq` together, every other change `version` alone. While it stays the same, the active rows
 * of a reading are still active, in the same places, and every row since sits after them.
 */
export const rewritesOf = (row: Pick<ConversationRow, 'version' | 'batch_seq'>): number => row.version - row.batch_seq;

export const totalsOf = (row: ConversationRow): LogTotals => ({
  version: row.version,
  batchSeq: row.batch_seq,
  activeMessages: row.active_messages,
  activeTokens: row.active_tokens,
});
