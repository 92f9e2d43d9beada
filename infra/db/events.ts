// The tenant's event feed (issue #14 §2, SPEC §13.5): `session:compress`, the compaction lifecycle events the
// database writes itself (migrations/0021: `compaction:started`, `compaction:completed`, `compaction:failed`) and the
// workflow's notices (`notice`), in id order. Read as the tenant (row-level security); a reader resumes after the
// last id it saw (Server-Sent Events' Last-Event-ID, a webhook's dispatch cursor).
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

export interface FeedEvent {
  id: number;
  type: string;
  conversationId: string | null;
  sessionId: string | null;
  compactionId: string | null;
  payload: Record<string, unknown>;
  createdAt: string;
}

export interface FeedQuery {
  /** Only this conversation's events. */
  conversationId?: string;
  limit: number;
}

/** The tenant's events after `afterId`, oldest first, at most `limit`. */
export async function eventsAfter(
  db: Kysely<Database>,
  tenantId: string,
  afterId: number,
  query: FeedQuery,
): Promise<FeedEvent[]> {
  const rows = await withTenant(
    db,
    tenantId,
    (tx) => {
      let q = tx
        .selectFrom('events')
        .select(['id', 'type', 'conversation_id', 'session_id', 'compaction_id', 'payload', 'created_at'])
        .where('tenant_id', '=', tenantId)
        .where('id', '>', afterId);
      if (query.conversationId !== undefined) q = q.where('conversation_id', '=', query.conversationId);
      return q.orderBy('id').limit(query.limit).execute();
    },
    READ_ONLY,
  );
  return rows.map((row) => ({
    id: Number(row.id),
    type: row.type,
    conversationId: row.conversation_id,
    sessionId: row.session_id,
    compactionId: row.compaction_id,
    payload: row.payload,
    createdAt: row.created_at.toISOString(),
  }));
}

/** The id of the tenant's (or the conversation's) newest event; 0 when there is none. */
export async function newestEventId(db: Kysely<Database>, tenantId: string, conversationId?: string): Promise<number> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      let q = tx
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('id'))
        .where('tenant_id', '=', tenantId);
      if (conversationId !== undefined) q = q.where('conversation_id', '=', conversationId);
      const row = await q.executeTakeFirst();
      return Number(row?.id ?? 0);
    },
    READ_ONLY,
  );
}

/** One event of the tenant's feed by id, or null. */
export async function eventById(db: Kysely<Database>, tenantId: string, id: number): Promise<FeedEvent | null> {
  const [event] = await eventsAfter(db, tenantId, id - 1, { limit: 1 });
  return event?.id === id ? event : null;
}
