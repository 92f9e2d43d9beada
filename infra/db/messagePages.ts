// Messages a page at a time (issue #14 §6 data lifecycle): one session's rows — the transcript in position order, or
// its whole history (archived rows included) in insertion order — and every row of a conversation, all sessions, in
// id order for the export. Keyset paging: a page starts after the key where the previous one ended, so pages never
// overlap or skip a row that stays where it is. Each page is its own read-only tenant transaction (no connection is
// held between pages); a compaction committed between two pages moves transcript positions, the id order never moves.
import { type Kysely, sql } from 'kysely';
import { rowToStored, type StoredMessage, selectStored } from './messages.js';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

/** The last row of a page: its position (transcript order) and id. */
export interface MessageKey {
  position: number;
  id: number;
}

export interface MessagePageOptions {
  /** Also rows archived by a compaction (SPEC §13.1): then in id order; otherwise the active transcript. */
  includeArchived: boolean;
  /** Rows per page; undefined: every row after `after`. */
  limit?: number;
  after?: MessageKey | null;
}

export interface MessagePage {
  rows: StoredMessage[];
  more: boolean;
}

function paged(rows: StoredMessage[], limit: number | undefined): MessagePage {
  if (limit === undefined || rows.length <= limit) return { rows, more: false };
  return { rows: rows.slice(0, limit), more: true };
}

/** One page of a session's rows (`includeArchived`: active and compacted, not superseded ones). */
export function pageSessionMessages(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  options: MessagePageOptions,
): Promise<MessagePage> {
  const { after, limit } = options;
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      let query = selectStored(tx, tenantId);
      if (options.includeArchived) {
        query = query
          .where('m.session_id', '=', sessionId)
          .where((eb) => eb.or([eb('s.active', '=', true), eb('s.compacted', '=', true)]))
          .orderBy('m.id');
        if (after) query = query.where('m.id', '>', after.id);
      } else {
        query = query
          .where('s.session_id', '=', sessionId)
          .where(sql<boolean>`s.active`)
          .orderBy('s.position')
          .orderBy('s.message_id');
        if (after) query = query.where(sql<boolean>`(s.position, s.message_id) > (${after.position}, ${after.id})`);
      }
      if (limit !== undefined) query = query.limit(limit + 1);
      return paged((await query.execute()).map(rowToStored), limit);
    },
    READ_ONLY,
  );
}

/** One page of every row of a conversation, every session and state, in id (insertion) order. */
export function pageConversationMessages(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  afterId: number,
  limit: number,
): Promise<MessagePage> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const rows = await selectStored(tx, tenantId)
        .where('m.conversation_id', '=', conversationId)
        .where('m.id', '>', afterId)
        .orderBy('m.id')
        .limit(limit + 1)
        .execute();
      return paged(rows.map(rowToStored), limit);
    },
    READ_ONLY,
  );
}
