// The JSONL export of one conversation (`GET /v1/conversations/:id/export`, issue #14 §6), written as it is read: a
// page of messages at a time (each page its own read, no connection held while the client reads), never the whole
// conversation in memory. Order: the `conversation` line, every `message` of every session in id order (archived and
// superseded rows included, with their flags and the compaction that inserted or archived them), then the
// `compaction` and `session` lines — read after the messages, so every compaction and session a message names is
// there — and an `end` line with the counts: a stream without it was cut off.
import type { Kysely } from 'kysely';
import type { SessionSummary } from '../../contracts/http/history.js';
import { listConversationCompactions } from '../../infra/db/conversationExport.js';
import { pageConversationMessages } from '../../infra/db/messagePages.js';
import type { ConversationRow, Database, SessionRow } from '../../infra/db/schema.js';
import { listConversationSessions } from '../../infra/db/sessions.js';

const PAGE = 500;

/** A session as the history routes answer it (contracts/http/history.ts SessionSummary). */
export function toSessionSummary(s: SessionRow, currentSessionId: string): SessionSummary {
  return {
    sessionId: s.id,
    parentSessionId: s.parent_session_id,
    current: s.id === currentSessionId,
    source: s.source,
    model: s.model,
    provider: s.provider,
    title: s.title,
    startedAt: s.started_at.toISOString(),
    endedAt: s.ended_at ? s.ended_at.toISOString() : null,
    endReason: s.end_reason,
    compressionCount: s.compression_count,
  };
}

const line = (value: Record<string, unknown>): string => `${JSON.stringify(value)}\n`;

export async function* exportConversation(
  db: Kysely<Database>,
  tenantId: string,
  conversation: ConversationRow,
  pageSize = PAGE,
): AsyncGenerator<string> {
  const conversationId = conversation.id;
  yield line({
    type: 'conversation',
    conversationId,
    tenantId,
    currentSessionId: conversation.current_session_id,
    model: conversation.model,
    provider: conversation.provider,
    contextLength: conversation.context_length,
    source: conversation.source,
    title: conversation.title,
    createdAt: conversation.created_at.toISOString(),
    updatedAt: conversation.updated_at.toISOString(),
    exportedAt: new Date().toISOString(),
  });
  let messages = 0;
  for (let afterId = 0, more = true; more; ) {
    const page = await pageConversationMessages(db, tenantId, conversationId, afterId, pageSize);
    for (const row of page.rows) {
      messages++;
      yield line({
        type: 'message',
        id: row.id,
        sessionId: row.sessionId,
        position: row.position,
        active: row.active,
        compacted: row.compacted,
        compactionId: row.compactionId,
        summaryBody: row.summaryBody,
        idempotencyKey: row.idempotencyKey,
        pinned: row.pinned,
        timestamp: row.timestamp.toISOString(),
        message: row.message,
      });
    }
    afterId = page.rows.at(-1)?.id ?? afterId;
    more = page.more;
  }
  const compactions = await listConversationCompactions(db, tenantId, conversationId);
  for (const compaction of compactions) yield line({ type: 'compaction', ...compaction });
  const sessions = await listConversationSessions(db, tenantId, conversationId);
  for (const s of sessions) {
    yield line({ type: 'session', ...toSessionSummary(s, conversation.current_session_id) });
  }
  yield line({ type: 'end', messages, compactions: compactions.length, sessions: sessions.length });
}
