// Appending to the conversation log (DESIGN.md §3, issue #9 §1 and §7): one tenant-scoped transaction per batch,
// retried as a whole (SPEC §13.6); under load, the gateway's plain batches share one (appendGroups.ts), each under
// its own tenant and appended exactly as alone (`appendInTransaction`). Idempotency keys are unique per conversation:
// a key already stored with the same message is a duplicate (skipped, reported), with a different message the whole
// batch is refused (IdempotencyConflictError). Positions continue after the last active row of the session, in batch
// order.
import type { Kysely, UpdateObject } from 'kysely';
import { canonicalJson } from '../../engine/commit/messageKeys.js';
import type { ChatMessage } from '../../engine/types.js';
import { type AppendReads, type AppendState, appendState, queueAppendReads } from './appendReads.js';
import {
  addToTotals,
  addToTotalsQuery,
  headByTwoLocks,
  type LogTotals,
  lockConversation,
  totalsAfterAppend,
  totalsOf,
} from './conversationHead.js';
import { queueKnownRows, type RowTarget, type RowWithId } from './messageInsert.js';
import { fieldsToMessage, toStoredMessage } from './messageRows.js';
import { type PipelinedStatement, pipelined } from './queuedStatements.js';
import type { ConversationRow, Database } from './schema.js';
import { lockSession } from './sessions.js';
import { ConversationNotFoundError, IdempotencyConflictError, SessionNotFoundError } from './storeErrors.js';
import { CUSTOM_PLANS, type TenantTx } from './tenant.js';
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
  /** The conversation's row as the batch's statement wrote it (appendToConversation with `row`, fresh rows only). */
  written?: ConversationRow;
  /** `after` did not hold: the batch's new items were not stored (appendToConversation). */
  stale?: boolean;
}

export function validateItems(items: readonly AppendItem[]): void {
  for (const item of items) {
    if (typeof item.idempotencyKey !== 'string' || item.idempotencyKey === '') {
      throw new TypeError('append: every item needs a non-empty idempotencyKey');
    }
  }
}

/**
 * Sorts the items against the conversation's keys: a key stored with the same message is a duplicate, with another
 * an IdempotencyConflictError; the others are fresh, each with its position and id. With `follows`, the batch must
 * follow the message of this key, the conversation's `last_key` now (`head`): else nothing fresh is stored (`stale`).
 */
function sortItems(
  state: AppendState,
  items: readonly AppendItem[],
  follows?: { after: string; head: string | null },
): { fresh: RowWithId[]; duplicates: string[]; stale: boolean } {
  const duplicates: string[] = [];
  const fresh: RowWithId[] = [];
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
    const id = state.ids[fresh.length];
    if (id === undefined) throw new Error('append: fewer ids drawn than fresh items');
    fresh.push({ ...item, position: state.nextPosition + fresh.length, id });
  });
  // Placed only right after the message it follows: when anything else was stored since, the fresh items are not.
  if (follows && fresh.length > 0 && follows.head !== follows.after) return { fresh: [], duplicates, stale: true };
  return { fresh, duplicates, stale: false };
}

/**
 * Appends to a locked session: dedup and conflicts against the conversation's keys, then the insert, queued
 * (`queueKnownRows`: it travels with the transaction's next statement or its COMMIT).
 */
async function appendLocked(
  tx: TenantTx,
  tenantId: string,
  target: RowTarget,
  items: readonly AppendItem[],
  state: AppendState,
  follows?: { after: string; head: string | null },
): Promise<{ appended: AppendedMessage[]; duplicates: string[]; stale: boolean }> {
  const { fresh, duplicates, stale } = sortItems(state, items, follows);
  const inserted = await queueKnownRows(tx, tenantId, target, fresh);
  const appended = inserted.map((row, i) => ({
    id: row.id,
    position: row.position,
    idempotencyKey: row.idempotencyKey as string,
    tokenEstimate: row.tokenEstimate,
    role: fresh[i]!.message.role,
  }));
  return { appended, duplicates, stale };
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
   * Runs on the conversation's row as locked, before anything is written: what it throws rolls the append back (a
   * chat turn that finds the workflow's rules not current for it, workers/gateway/chatTurns.ts).
   */
  admit?: (head: ConversationRow) => void;
  /**
   * The idempotency key of the message the batch must follow: unless it is the conversation's newest keyed message
   * (`last_key`), the batch's new items are not stored (`stale`); its duplicates are reported as usual.
   */
  after?: string;
  /** `written` comes back: the conversation's row as the batch's statement wrote it (else only its totals, checked). */
  row?: boolean;
}

const tokensOf = (rows: readonly AppendedMessage[]) => rows.reduce((sum, r) => sum + r.tokenEstimate, 0);

/**
 * The append's own statements (the lock, the key and position read, the insert, the totals) probe by key, with plans
 * that do not depend on the values: planned once per connection, not on every append (issue #11: ~0.7 ms of
 * PostgreSQL's CPU per batch went to planning them).
 */
export const APPEND_PLANS = { genericPlans: true } as const;

/** What one append leaves for after its COMMIT: its result, and the totals' statement to check (none: no fresh row). */
export interface AppendInTransaction {
  result: AppendResult;
  written: PipelinedStatement<Pick<ConversationRow, 'version' | 'batch_seq'>> | null;
}

/**
 * What `appendInTransaction` throws before it queued any of the batch's writes (its `admit`'s refusals aside): the
 * conversation or its session is gone, or a key holds another message. The transaction is intact; nothing of the
 * batch is left to write (appendGroups.ts refuses that batch alone and commits the rest).
 */
export const refusedBeforeWrites = (error: unknown): boolean =>
  error instanceof ConversationNotFoundError ||
  error instanceof SessionNotFoundError ||
  error instanceof IdempotencyConflictError;

/**
 * One append's statements in an open tenant transaction (APPEND_PLANS): the lock travels with the read of the keys
 * and the next position; the insert and the totals are queued, to travel with the transaction's next statement or
 * its COMMIT. What it throws before anything is queued (`refusedBeforeWrites`, or `admit`'s refusal) leaves nothing
 * of the batch to write; once the insert is queued only `settle` and `within` can throw. After the COMMIT,
 * `confirmAppend` checks what the totals' statement wrote. `reads`: its first reads, queued already (appendReads.ts
 * `queueAppendReads`) and sent by the time they are read.
 */
export async function appendInTransaction(
  tx: TenantTx,
  tenantId: string,
  conversationId: string,
  items: readonly AppendItem[],
  options: AppendOptions = {},
  reads?: AppendReads,
): Promise<AppendInTransaction> {
  const keys = items.map((i) => i.idempotencyKey);
  const first = reads ?? (await queueAppendReads(tx, tenantId, conversationId, keys, true));
  let state = await first.state();
  let conversation = await first.head();
  if (!conversation || state.sessionId !== conversation.current_session_id) {
    conversation ??= await headByTwoLocks(tx, tenantId, conversationId);
    state = await appendState(tx, tenantId, conversationId, conversation.current_session_id, keys);
  }
  options.admit?.(conversation);
  const target = { sessionId: conversation.current_session_id, conversationId };
  const follows = options.after !== undefined ? { after: options.after, head: conversation.last_key } : undefined;
  const { appended, duplicates, stale } = await appendLocked(tx, tenantId, target, items, state, follows);
  const delta = { messages: appended.length, tokens: tokensOf(appended) };
  const fresh = appended.length > 0;
  // Under the row's lock the totals after the batch are known before the statement that writes them.
  const result: AppendResult = {
    appended,
    duplicates,
    ...(stale ? { stale } : {}),
    ...target,
    totals: fresh ? totalsAfterAppend(conversation, delta) : totalsOf(conversation),
  };
  const extra = options.settle?.(result, conversation) ?? null;
  let written: AppendInTransaction['written'] = null;
  if (fresh) {
    const set = { ...extra, ...lastKeyOf(appended) };
    const returning = options.row ? 'row' : 'totals';
    written = await pipelined(tx, addToTotalsQuery(tx, tenantId, conversationId, delta, set, returning));
  } else if (extra) {
    await pipelined(
      tx,
      tx
        .updateTable('conversations')
        .set(extra)
        .where('tenant_id', '=', tenantId)
        .where('id', '=', conversationId)
        .compile(),
    );
  }
  if (options.within) {
    // The caller's statements are planned for their values again (e.g. a read of the session's rows).
    await tx.executeQuery(CUSTOM_PLANS());
    await options.within(tx, result);
  }
  return { result, written };
}

/** After the COMMIT: the conversation's row as the batch's statement wrote it, checked against the totals expected. */
export async function confirmAppend(
  conversationId: string,
  { result, written }: AppendInTransaction,
  options: Pick<AppendOptions, 'row'> = {},
): Promise<AppendResult> {
  if (written) {
    const row = (await written.result).rows[0];
    if (!row || row.version !== result.totals?.version || row.batch_seq !== result.totals.batchSeq) {
      throw new Error(`conversation ${conversationId}: totals moved under its lock`);
    }
    if (options.row) result.written = row as ConversationRow;
  }
  return result;
}

/**
 * The conversation log's append (gateway, chat turns): the batch goes to the conversation's current session.
 * `within` runs further writes in the same transaction (e.g. the turn record of a model reply).
 *
 * Two round trips (issue #11: each flight costs a wake-up of both sides, and the conversation's lock is held across
 * them): the lock travels with the read of the keys and the next position; the insert and the totals travel with the
 * COMMIT (or with `within`'s first statement).
 */
export async function appendToConversation(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  items: readonly AppendItem[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  validateItems(items);
  const appended = await withTenantWrite(
    db,
    tenantId,
    (tx) => appendInTransaction(tx, tenantId, conversationId, items, options),
    APPEND_PLANS,
  );
  return confirmAppend(conversationId, appended, options);
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
    const keys = items.map((i) => i.idempotencyKey);
    const state = await appendState(tx, tenantId, target.conversationId, sessionId, keys);
    const { appended, duplicates } = await appendLocked(tx, tenantId, target, items, state);
    const current = conversation?.current_session_id === sessionId ? conversation : undefined;
    let totals: LogTotals | null = current ? totalsOf(current) : null;
    if (current && appended.length > 0) {
      const delta = { messages: appended.length, tokens: tokensOf(appended) };
      totals = totalsOf((await addToTotals(tx, tenantId, current.id, delta, lastKeyOf(appended))).row);
    }
    return { appended, duplicates, ...target, totals };
  });
}
