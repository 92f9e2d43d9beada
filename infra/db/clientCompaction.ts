// A drop-in client's own compaction in the conversation log (issue #12 "Client-side compaction is recognised"):
// the record of the summary request the gateway passed through (trigger 'client', pending until the client's
// shorter history arrives), and the commit that makes that history a new session of the same conversation — ONE
// tenant-scoped transaction: the new session (parent = the current one, compression_count + 1, numbered title), the
// old one ended with reason 'compression', the conversation switched to the new session with empty totals and its
// client floor raised above every stored row (history matching starts again there, infra/db/historyKeys.ts), the
// record committed and the SPEC §13.5 `session:compress` event written.
import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { insertCompressEvent } from './compactionCommit/shared.js';
import { requireLockedHead, setTotals } from './conversationHead.js';
import type { ConversationRow, Database } from './schema.js';
import { lockSession, rotateSession } from './sessions.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

/** The pending client compaction of a conversation's current session: the summary the client was given. */
export interface PendingClientCompaction {
  id: string;
  sessionId: string;
  summary: string;
}

/**
 * Records the summary a client's compaction request got, on the conversation's current session (a repeated request
 * refreshes the pending record: the client uses the summary it received last).
 */
export function recordClientCompaction(
  db: Kysely<Database>,
  tenantId: string,
  input: { conversationId: string; summary: string },
): Promise<PendingClientCompaction> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const head = await requireLockedHead(tx, tenantId, input.conversationId);
    const sessionId = head.current_session_id;
    const refreshed = await tx
      .updateTable('compactions')
      .set({ summary: input.summary, updated_at: sql`now()` })
      .where('tenant_id', '=', tenantId)
      .where('session_id', '=', sessionId)
      .where('trigger', '=', 'client')
      .where('status', '=', 'pending')
      .returning(['id'])
      .executeTakeFirst();
    if (refreshed) return { id: refreshed.id, sessionId, summary: input.summary };
    const id = `client-${randomUUID()}`;
    await tx
      .insertInto('compactions')
      .values({
        tenant_id: tenantId,
        id,
        session_id: sessionId,
        conversation_id: input.conversationId,
        seq: 0,
        trigger: 'client',
        in_place: false,
        summary: input.summary,
      })
      .execute();
    return { id, sessionId, summary: input.summary };
  });
}

/** The conversation's client compactions whose old (`k.session_id`) or new session is its current one (`c`). */
function clientCompactionsAt(
  tx: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  session: 'k.session_id' | 'k.new_session_id',
) {
  return tx
    .selectFrom('compactions as k')
    .innerJoin('conversations as c', (join) =>
      join.onRef('c.tenant_id', '=', 'k.tenant_id').onRef('c.current_session_id', '=', session),
    )
    .where('k.tenant_id', '=', tenantId)
    .where('c.id', '=', conversationId)
    .where('k.trigger', '=', 'client');
}

/** The conversation's pending client compaction (on its current session), or null. */
export function pendingClientCompaction(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<PendingClientCompaction | null> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const row = await clientCompactionsAt(tx, tenantId, conversationId, 'k.session_id')
        .select(['k.id', 'k.session_id', 'k.summary'])
        .where('k.status', '=', 'pending')
        .orderBy('k.updated_at', 'desc')
        .executeTakeFirst();
      return row ? { id: row.id, sessionId: row.session_id, summary: row.summary ?? '' } : null;
    },
    READ_ONLY,
  );
}

/**
 * The tenant's newest client compactions (at most `limit`, migrations/0026's index) that stand at their conversation's
 * current session: pending on it, or committed into it. Where a client whose history opens otherwise after its own
 * compaction continues (clientRotation.ts `conversationCarrying`): `conversationId`, and the summary it carries.
 */
export function recentClientCompactions(
  db: Kysely<Database>,
  tenantId: string,
  limit = 20,
): Promise<Array<{ conversationId: string; summary: string }>> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const rows = await tx
        .selectFrom('compactions as k')
        .innerJoin('conversations as c', (join) =>
          join
            .onRef('c.tenant_id', '=', 'k.tenant_id')
            .on((eb) =>
              eb.or([
                eb.and([eb('k.status', '=', 'pending'), eb('c.current_session_id', '=', eb.ref('k.session_id'))]),
                eb.and([eb('k.status', '=', 'committed'), eb('c.current_session_id', '=', eb.ref('k.new_session_id'))]),
              ]),
            ),
        )
        .select(['k.summary', 'c.id as conversation_id'])
        .where('k.tenant_id', '=', tenantId)
        .where('k.trigger', '=', 'client')
        .orderBy('k.created_at', 'desc')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ conversationId: row.conversation_id, summary: row.summary ?? '' }));
    },
    READ_ONLY,
  );
}

/** The committed client compaction that started session `sessionId` of the conversation, or null. */
export function clientRotationInto(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  sessionId: string,
): Promise<{ compactionId: string; head: ConversationRow } | null> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const row = await clientCompactionsAt(tx, tenantId, conversationId, 'k.new_session_id')
        .selectAll('c')
        .select('k.id as compaction_id')
        .where('k.new_session_id', '=', sessionId)
        .where('k.status', '=', 'committed')
        .executeTakeFirst();
      if (!row) return null;
      const { compaction_id: compactionId, ...head } = row;
      return { compactionId, head: head as ConversationRow };
    },
    READ_ONLY,
  );
}

export interface ClientRotation {
  compactionId: string;
  /** The new session (generated by the caller, like every session id). */
  sessionId: string;
  oldSessionId: string;
  compressionCount: number;
  /** The conversation's row after the commit (for the workflow's notification). */
  head: ConversationRow;
}

/**
 * Commits the pending client compaction `compactionId` as a rotation to `newSessionId`; `tokensAfter` is the
 * estimate of the history the client sends now (the new session's transcript once stored). Null when the record is
 * no longer pending (another request committed it: the caller matches its history again).
 */
export function commitClientRotation(
  db: Kysely<Database>,
  tenantId: string,
  input: { conversationId: string; compactionId: string; newSessionId: string; tokensAfter: number },
): Promise<ClientRotation | null> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const head = await requireLockedHead(tx, tenantId, input.conversationId);
    const old = await lockSession(tx, tenantId, head.current_session_id);
    const record = await tx
      .selectFrom('compactions')
      .select(['id', 'summary'])
      .where('tenant_id', '=', tenantId)
      .where('id', '=', input.compactionId)
      .where('status', '=', 'pending')
      .forUpdate()
      .executeTakeFirst();
    if (!record) return null;
    const created = await rotateSession(tx, tenantId, old, input.newSessionId);
    await tx
      .updateTable('conversations')
      .set({
        client_floor: sql`(SELECT coalesce(max(m.id), 0) FROM messages m
                            WHERE m.tenant_id = ${tenantId} AND m.conversation_id = ${input.conversationId})`,
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', input.conversationId)
      .execute();
    await setTotals(tx, tenantId, input.conversationId, {
      activeMessages: 0,
      activeTokens: 0,
      currentSessionId: created.id,
    });
    const stats = {
      tokensBefore: head.active_tokens,
      tokensAfter: input.tokensAfter,
      prunedCount: 0,
      droppedCount: head.active_messages,
      fallbackUsed: false,
      aborted: false,
      noop: false as const,
      summary: record.summary,
    };
    await tx
      .updateTable('compactions')
      .set({
        status: 'committed',
        in_place: false,
        new_session_id: created.id,
        stats: JSON.stringify(stats),
        completed_at: sql`now()`,
        updated_at: sql`now()`,
      })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', input.compactionId)
      .execute();
    // SPEC §13.5 payload, as for a rotation the host ran.
    await insertCompressEvent(tx, tenantId, input.compactionId, {
      platform: old.source,
      session_id: created.id,
      old_session_id: old.id,
      in_place: false,
      compression_count: created.compression_count,
    });
    const row = await tx
      .selectFrom('conversations')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('id', '=', input.conversationId)
      .executeTakeFirstOrThrow();
    return {
      compactionId: input.compactionId,
      sessionId: created.id,
      oldSessionId: old.id,
      compressionCount: created.compression_count,
      head: row,
    };
  });
}
