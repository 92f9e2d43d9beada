// Codex app-server sessions in the conversation log (SPEC §15.2): the thread a conversation's context lives in, and
// the record of each compaction the app-server reported — ONE tenant-scoped transaction: the compaction record
// (trigger `codex_app_server`, in place, committed, the boundary and the thread/turn; no rows change), the session's
// compression_count + 1, and the SPEC §13.5 `session:compress` event with `runtime`, `thread_id` and `turn_id`.
// Keyed by the app-server's own ids, so a compaction reported twice (an activity retry) is recorded once.
import { type Kysely, sql } from 'kysely';
import { insertCompressEvent } from './compactionCommit/shared.js';
import { requireLockedHead } from './conversationHead.js';
import type { Database } from './schema.js';
import { countCompression, lockSession } from './sessions.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

/** The conversation's app-server thread, or null before its first turn. */
export async function selectCodexThread(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<string | null> {
  const row = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('conversations')
        .select('codex_thread_id')
        .where('tenant_id', '=', tenantId)
        .where('id', '=', conversationId)
        .executeTakeFirst(),
    READ_ONLY,
  );
  return row?.codex_thread_id ?? null;
}

/** Keeps `threadId` as the conversation's thread unless it has one already; returns the one it keeps. */
export function claimCodexThread(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  threadId: string,
): Promise<string> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const head = await requireLockedHead(tx, tenantId, conversationId);
    if (head.codex_thread_id) return head.codex_thread_id;
    await tx
      .updateTable('conversations')
      .set({ codex_thread_id: threadId })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', conversationId)
      .execute();
    return threadId;
  });
}

/** The record id of an app-server compaction: its item's ids, so a repeated report finds the same record. */
export function appServerCompactionId(threadId: string, itemId: string): string {
  return `codex:${threadId}:${itemId}`;
}

export interface AppServerCompactionRecord {
  threadId: string;
  turnId: string;
  itemId: string;
  /** The last real reading before it and the first after it (0 when the app-server reported none). */
  tokensBefore: number;
  tokensAfter: number;
}

export interface RecordedAppServerCompaction {
  compactionId: string;
  sessionId: string;
  compressionCount: number;
  /** False when the compaction was recorded before (nothing changed now). */
  recorded: boolean;
}

export function recordAppServerCompaction(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  compaction: AppServerCompactionRecord,
): Promise<RecordedAppServerCompaction> {
  const id = appServerCompactionId(compaction.threadId, compaction.itemId);
  return withTenantWrite(db, tenantId, async (tx) => {
    const head = await requireLockedHead(tx, tenantId, conversationId);
    const session = await lockSession(tx, tenantId, head.current_session_id);
    const stats = {
      tokensBefore: compaction.tokensBefore,
      tokensAfter: compaction.tokensAfter,
      prunedCount: 0,
      droppedCount: 0,
      fallbackUsed: false,
      aborted: false,
      noop: false as const,
      summary: null,
    };
    const inserted = await tx
      .insertInto('compactions')
      .values({
        tenant_id: tenantId,
        id,
        session_id: session.id,
        conversation_id: conversationId,
        seq: 0,
        trigger: 'codex_app_server',
        in_place: true,
        status: 'committed',
        stats: JSON.stringify(stats),
        completed_at: sql`now()`,
        boundary_message_id: sql<number | null>`(SELECT max(m.id) FROM messages m
          WHERE m.tenant_id = ${tenantId} AND m.conversation_id = ${conversationId})`,
        thread_id: compaction.threadId,
        turn_id: compaction.turnId,
      })
      .onConflict((oc) => oc.columns(['tenant_id', 'id']).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) {
      return { compactionId: id, sessionId: session.id, compressionCount: session.compression_count, recorded: false };
    }
    const compressionCount = await countCompression(tx, tenantId, session.id);
    await insertCompressEvent(tx, tenantId, id, {
      platform: session.source,
      session_id: session.id,
      old_session_id: '',
      in_place: true,
      compression_count: compressionCount,
      runtime: 'codex_app_server',
      thread_id: compaction.threadId,
      turn_id: compaction.turnId,
    });
    return { compactionId: id, sessionId: session.id, compressionCount, recorded: true };
  });
}
