// The answer of the message list routes (`GET …/messages` of the current session, `GET …/sessions/:id/messages` of any
// session; issue #14 §6): every row when neither `limit` nor `cursor` is given (the route's behaviour before paging),
// else one page and the cursor of the next. A cursor is bound to its session and ordering (pageCursor.ts).
import type { Kysely } from 'kysely';
import type { StoredMessages } from '../../contracts/http/conversations.js';
import { type MessageKey, pageSessionMessages } from '../../infra/db/messagePages.js';
import type { Database } from '../../infra/db/schema.js';
import { decodeCursor, encodeCursor } from './pageCursor.js';

export interface MessagePageQuery {
  archived?: boolean;
  limit?: number;
  cursor?: string;
}

/** A page's default size once `cursor` is given without `limit`. */
const CURSOR_PAGE = 100;

export async function messagePage(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  query: MessagePageQuery,
): Promise<StoredMessages> {
  const includeArchived = query.archived === true;
  const kind = includeArchived ? 'messages-by-id' : 'transcript';
  const after: MessageKey | null = query.cursor
    ? decodeCursor(query.cursor, kind, sessionId, { position: 'number', id: 'number' })
    : null;
  const limit = query.limit ?? (after ? CURSOR_PAGE : undefined);
  const page = await pageSessionMessages(db, tenantId, sessionId, {
    includeArchived,
    ...(limit !== undefined ? { limit } : {}),
    after,
  });
  const last = page.rows.at(-1);
  return {
    sessionId,
    messages: page.rows.map((r) => ({
      id: r.id,
      position: r.position,
      active: r.active,
      compacted: r.compacted,
      pinned: r.pinned,
      timestamp: r.timestamp.toISOString(),
      message: r.message,
    })),
    nextCursor: page.more && last ? encodeCursor(kind, sessionId, { position: last.position, id: last.id }) : null,
  };
}
