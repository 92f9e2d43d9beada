// Erasure of a conversation or a whole tenant (issue #14 §6 data lifecycle): the one path that deletes. It runs as the
// owner role — the tenant role cannot delete and must stay unable to (migrations/0001) — in one transaction of DELETE
// statements (no DROP/TRUNCATE, which wait for autovacuum's lock), retried as a whole on serialization failures like
// every write (writeRetry.ts), with its audit row (migrations/0020: counts per table, never content) in the same
// transaction. What Temporal holds is removed by infra/temporal/erasure.ts, with the ids read here first.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import { sqlState, withWriteRetry } from './writeRetry.js';

export interface ErasureTarget {
  tenantId: string;
  /** Absent: the whole tenant. */
  conversationId?: string;
}

export interface ErasureRequest extends ErasureTarget {
  requestedBy: string;
  reason: string | null;
}

/** What Temporal may hold of the target: its sessions and compactions (workflow ids are built from them). */
export interface ErasureScope {
  sessionIds: string[];
  compactions: Array<{ id: string; sessionId: string; seq: number }>;
  /** A whole tenant: its conversations and webhook endpoints, whose workflows are named by them (else empty). */
  conversationIds: string[];
  webhookIds: string[];
}

export interface ErasedRows {
  erasureId: number;
  /** Rows deleted per table (`sessions_unlinked`: other conversations' branches whose parent link was cut). */
  rows: Record<string, number>;
}

/** The sessions and compactions of the target, read as the owner (the ids Temporal's workflows are named by). */
export async function erasureScope(db: Kysely<Database>, target: ErasureTarget): Promise<ErasureScope> {
  let sessions = db.selectFrom('sessions').select('id').where('tenant_id', '=', target.tenantId);
  let compactions = db.selectFrom('compactions').select(['id', 'session_id', 'seq']);
  compactions = compactions.where('tenant_id', '=', target.tenantId);
  if (target.conversationId !== undefined) {
    sessions = sessions.where('conversation_id', '=', target.conversationId);
    compactions = compactions.where('conversation_id', '=', target.conversationId);
  }
  const whole = target.conversationId === undefined;
  const [s, c, conversations, webhooks] = await Promise.all([
    sessions.execute(),
    compactions.execute(),
    whole ? db.selectFrom('conversations').select('id').where('tenant_id', '=', target.tenantId).execute() : [],
    whole ? db.selectFrom('webhooks').select('id').where('tenant_id', '=', target.tenantId).execute() : [],
  ]);
  return {
    sessionIds: s.map((r) => r.id),
    compactions: c.map((r) => ({ id: r.id, sessionId: r.session_id, seq: r.seq })),
    conversationIds: conversations.map((r) => r.id),
    webhookIds: webhooks.map((r) => r.id),
  };
}

type Tx = Transaction<Database>;

async function count(tx: Tx, statement: ReturnType<typeof sql>): Promise<number> {
  const result = await statement.execute(tx);
  return Number(result.numAffectedRows ?? 0n);
}

/** The conversation's rows, children before parents (foreign keys), in one transaction. */
async function deleteConversation(tx: Tx, t: string, c: string): Promise<Record<string, number>> {
  const sessions = sql`(SELECT id FROM sessions WHERE tenant_id = ${t} AND conversation_id = ${c})`;
  return {
    message_state: await count(
      tx,
      sql`DELETE FROM message_state WHERE tenant_id = ${t} AND message_id IN
            (SELECT id FROM messages WHERE tenant_id = ${t} AND conversation_id = ${c})`,
    ),
    turns: await count(tx, sql`DELETE FROM turns WHERE tenant_id = ${t} AND conversation_id = ${c}`),
    events: await count(
      tx,
      sql`DELETE FROM events WHERE tenant_id = ${t} AND (conversation_id = ${c} OR session_id IN ${sessions}
            OR compaction_id IN (SELECT id FROM compactions WHERE tenant_id = ${t} AND conversation_id = ${c}))`,
    ),
    compactions: await count(tx, sql`DELETE FROM compactions WHERE tenant_id = ${t} AND conversation_id = ${c}`),
    messages: await count(tx, sql`DELETE FROM messages WHERE tenant_id = ${t} AND conversation_id = ${c}`),
    conversations: await count(tx, sql`DELETE FROM conversations WHERE tenant_id = ${t} AND id = ${c}`),
    // A branch of another conversation (a drop-in history that diverged) keeps its rows, without the parent link.
    sessions_unlinked: await count(
      tx,
      sql`UPDATE sessions SET parent_session_id = NULL
           WHERE tenant_id = ${t} AND conversation_id <> ${c} AND parent_session_id IN ${sessions}`,
    ),
    sessions: await count(tx, sql`DELETE FROM sessions WHERE tenant_id = ${t} AND conversation_id = ${c}`),
  };
}

/** Every row of the tenant, the tenant row last; its compaction totals join the anonymous bucket (0020). */
async function deleteTenant(tx: Tx, t: string): Promise<Record<string, number>> {
  const rows: Record<string, number> = {};
  for (const table of ['message_state', 'turns', 'events', 'compactions', 'messages', 'conversations', 'sessions']) {
    rows[table] = await count(tx, sql`DELETE FROM ${sql.table(table)} WHERE tenant_id = ${t}`);
  }
  rows.tenant_markers = await count(tx, sql`DELETE FROM tenant_markers WHERE tenant_id = ${t}`);
  // Webhook endpoints and their delivery records (0021); the endpoints' workflows carry TenantId and are erased too.
  rows.webhook_deliveries = await count(tx, sql`DELETE FROM webhook_deliveries WHERE tenant_id = ${t}`);
  rows.webhooks = await count(tx, sql`DELETE FROM webhooks WHERE tenant_id = ${t}`);
  rows.api_keys = await count(tx, sql`DELETE FROM api_keys WHERE tenant_id = ${t}`);
  // /metrics counts compactions over all tenants: the erased tenant's totals stay counted, under no tenant's id.
  await sql`
    INSERT INTO compaction_totals AS k (tenant_id, "trigger", status, compactions, tokens_saved)
    SELECT ${ERASED_TENANTS}, "trigger", status, compactions, tokens_saved FROM compaction_totals WHERE tenant_id = ${t}
    ON CONFLICT (tenant_id, "trigger", status) DO UPDATE
       SET compactions = k.compactions + excluded.compactions, tokens_saved = k.tokens_saved + excluded.tokens_saved`.execute(
    tx,
  );
  rows.compaction_totals = await count(tx, sql`DELETE FROM compaction_totals WHERE tenant_id = ${t}`);
  rows.tenants = await count(tx, sql`DELETE FROM tenants WHERE id = ${t}`);
  return rows;
}

/** The compaction totals of erased tenants (no tenant id matches it: ids start with a letter or digit). */
export const ERASED_TENANTS = '(erased)';

/** foreign_key_violation: a row was added to the target while it was being deleted (e.g. a new conversation). */
const FOREIGN_KEY_VIOLATION = '23503';
const MAX_ERASE_ATTEMPTS = 5;

/**
 * Deletes the target's rows and writes the audit row, in one transaction retried as a whole. It first takes the
 * conversations' row locks, as every writer of a conversation's log does (conversationHead.ts lock order), so no append
 * or compaction commit of the target can land between its DELETE statements; a row added anyway (a conversation
 * created meanwhile) fails a foreign key and the whole transaction runs again.
 */
export async function eraseRows(db: Kysely<Database>, request: ErasureRequest): Promise<ErasedRows> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await eraseRowsOnce(db, request);
    } catch (error) {
      if (attempt >= MAX_ERASE_ATTEMPTS || sqlState(error) !== FOREIGN_KEY_VIOLATION) throw error;
    }
  }
}

function eraseRowsOnce(db: Kysely<Database>, request: ErasureRequest): Promise<ErasedRows> {
  return withWriteRetry(() =>
    db.transaction().execute(async (tx) => {
      let locks = tx.selectFrom('conversations').select('id').where('tenant_id', '=', request.tenantId);
      if (request.conversationId !== undefined) locks = locks.where('id', '=', request.conversationId);
      await locks.orderBy('id').forUpdate().execute();
      const rows =
        request.conversationId === undefined
          ? await deleteTenant(tx, request.tenantId)
          : await deleteConversation(tx, request.tenantId, request.conversationId);
      const audit = await tx
        .insertInto('erasures')
        .values({
          scope: request.conversationId === undefined ? 'tenant' : 'conversation',
          tenant_id: request.tenantId,
          conversation_id: request.conversationId ?? null,
          requested_by: request.requestedBy,
          reason: request.reason,
          rows_deleted: JSON.stringify(rows),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { erasureId: Number(audit.id), rows };
    }),
  );
}

/** Temporal's side is done too: the audit row says how many workflow executions were deleted. */
export async function completeErasure(db: Kysely<Database>, erasureId: number, workflowsDeleted: number) {
  return db
    .updateTable('erasures')
    .set({ status: 'completed', workflows_deleted: workflowsDeleted, completed_at: sql`now()` })
    .where('id', '=', erasureId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The audit rows, newest first, optionally of one tenant; a page after `beforeId`. */
export function listErasures(db: Kysely<Database>, filter: { tenantId?: string; beforeId?: number; limit: number }) {
  let query = db.selectFrom('erasures').selectAll();
  if (filter.tenantId !== undefined) query = query.where('tenant_id', '=', filter.tenantId);
  if (filter.beforeId !== undefined) query = query.where('id', '<', filter.beforeId);
  return query
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
}
