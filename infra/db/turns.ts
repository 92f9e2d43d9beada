// Agent turns run by the system (chat backend mode) and their cache economics (migration 0004).
import { type Kysely, type Selectable, sql } from 'kysely';
import type { TurnUsage } from '../../contracts/conversation.js';
import type { NativeReplay } from '../../engine/nativeCompaction.js';
import type { Database, TurnsTable } from './schema.js';
import { READ_ONLY, type TenantTx, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

export interface TurnRecord {
  id: string;
  sessionId: string;
  conversationId: string;
  model: string;
  provider: string | null;
  messageId: number | null;
  finishReason: string | null;
  promptTokens: number;
  completionTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  uncachedInputTokens: number;
  cachingEnabled: boolean;
  afterCompactionId: string | null;
  /** The reply's `compaction` items with the route that issued them (SPEC §15.1 replay data); null for most turns. */
  replay?: NativeReplay | null;
}

/** Inserts the turn once (its id is the turn key; a retry changes nothing), in the caller's transaction. */
export async function insertTurn(tx: TenantTx, tenantId: string, turn: TurnRecord): Promise<void> {
  await tx.executeQuery(insertTurnQuery(tx, tenantId, turn));
}

/** The statement of insertTurn, for a caller that sends it later (`pipelined`). */
export function insertTurnQuery(tx: TenantTx, tenantId: string, turn: TurnRecord) {
  return tx
    .insertInto('turns')
    .values({
      tenant_id: tenantId,
      id: turn.id,
      session_id: turn.sessionId,
      conversation_id: turn.conversationId,
      model: turn.model,
      provider: turn.provider,
      message_id: turn.messageId,
      finish_reason: turn.finishReason,
      prompt_tokens: turn.promptTokens,
      completion_tokens: turn.completionTokens,
      cache_read_tokens: turn.cacheReadTokens,
      cache_write_tokens: turn.cacheWriteTokens,
      uncached_input_tokens: turn.uncachedInputTokens,
      caching_enabled: turn.cachingEnabled,
      after_compaction_id: turn.afterCompactionId,
      replay: turn.replay ? JSON.stringify(turn.replay) : null,
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'id']).doNothing())
    .compile();
}

/** Inserts the turn once, in its own transaction. */
export async function recordTurn(db: Kysely<Database>, tenantId: string, turn: TurnRecord): Promise<void> {
  await withTenantWrite(db, tenantId, (tx) => insertTurn(tx, tenantId, turn));
}

/** The turn with this id, within the caller's tenant transaction, or null. */
export async function selectTurn(tx: TenantTx, id: string): Promise<TurnRecord | null> {
  return turnOf((await tx.executeQuery(turnQuery(tx, id))).rows[0]);
}

/** The statement of selectTurn, for a caller that reads its row later (`pipelined`); `turnOf` reads the row. */
export const turnQuery = (tx: TenantTx, id: string) =>
  tx.selectFrom('turns').selectAll().where('id', '=', id).compile();

/** The turn of a row of `turnQuery`, or null. */
export function turnOf(row: Selectable<TurnsTable> | undefined): TurnRecord | null {
  if (!row) return null;
  return {
    id: row.id,
    sessionId: row.session_id,
    conversationId: row.conversation_id,
    model: row.model,
    provider: row.provider,
    messageId: row.message_id,
    finishReason: row.finish_reason,
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
    cacheReadTokens: row.cache_read_tokens,
    cacheWriteTokens: row.cache_write_tokens,
    uncachedInputTokens: row.uncached_input_tokens,
    cachingEnabled: row.caching_enabled,
    afterCompactionId: row.after_compaction_id,
    replay: row.replay,
  };
}

/** A stored turn's usage as the provider reported it (the reply's usage of the turn that stored it). */
export function turnUsage(turn: TurnRecord): TurnUsage {
  return {
    prompt_tokens: turn.promptTokens,
    completion_tokens: turn.completionTokens,
    total_tokens: turn.promptTokens + turn.completionTokens,
    cache_read_tokens: turn.cacheReadTokens,
    cache_write_tokens: turn.cacheWriteTokens,
    uncached_input_tokens: turn.uncachedInputTokens,
  };
}

export function getTurn(db: Kysely<Database>, tenantId: string, id: string): Promise<TurnRecord | null> {
  return withTenant(db, tenantId, (tx) => selectTurn(tx, id), READ_ONLY);
}

/**
 * The replay data of the replies among `messageIds` (SPEC §15.1), by message id, in the caller's tenant
 * transaction: what a Responses request over those rows may send back.
 */
export async function selectReplays(
  tx: TenantTx,
  tenantId: string,
  messageIds: readonly number[],
): Promise<Map<number, NativeReplay>> {
  if (messageIds.length === 0) return new Map();
  const rows = await tx
    .selectFrom('turns')
    .select(['message_id', 'replay'])
    .where('tenant_id', '=', tenantId)
    .where('replay', 'is not', null)
    .where(sql<boolean>`message_id = ANY(${[...messageIds]}::bigint[])`)
    .execute();
  const out = new Map<number, NativeReplay>();
  for (const row of rows) if (row.message_id !== null && row.replay) out.set(row.message_id, row.replay);
  return out;
}
