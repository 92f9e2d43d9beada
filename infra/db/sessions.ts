// Sessions: creation, reads, lineage and rotation titles (SPEC §13.1, §13.3). Tenant-scoped under row-level security.
import { type Kysely, sql } from 'kysely';
import type { Database, SessionRow } from './schema.js';
import { SessionNotFoundError } from './storeErrors.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

/** SPEC §13.3: resuming follows at most this many parent → child hops. */
export const MAX_LINEAGE_HOPS = 32;

export interface NewSession {
  id: string;
  conversationId: string;
  /** Platform (`cli`, `telegram`, …); the column default is `api`. */
  source?: string;
  model?: string | null;
  provider?: string | null;
  title?: string | null;
  parentSessionId?: string | null;
}

/** Inserts the session unless its id exists; returns the inserted row, or undefined when the id was taken. */
export async function insertSessionIfAbsent(
  tx: Kysely<Database>,
  tenantId: string,
  session: NewSession & { compressionCount?: number; responsesNativeDisabled?: boolean },
): Promise<SessionRow | undefined> {
  return tx
    .insertInto('sessions')
    .values({
      tenant_id: tenantId,
      id: session.id,
      conversation_id: session.conversationId,
      ...(session.source !== undefined ? { source: session.source } : {}),
      model: session.model ?? null,
      provider: session.provider ?? null,
      title: session.title ?? null,
      parent_session_id: session.parentSessionId ?? null,
      ...(session.compressionCount !== undefined ? { compression_count: session.compressionCount } : {}),
      ...(session.responsesNativeDisabled ? { responses_native_disabled: true } : {}),
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'id']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Idempotent: creating the same id twice returns the stored session (unchanged). */
export function createSession(db: Kysely<Database>, tenantId: string, session: NewSession): Promise<SessionRow> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const inserted = await insertSessionIfAbsent(tx, tenantId, session);
    if (inserted) return inserted;
    return tx
      .selectFrom('sessions')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .where('id', '=', session.id)
      .executeTakeFirstOrThrow();
  });
}

export function getSession(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<SessionRow | undefined> {
  return withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('sessions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('id', '=', sessionId)
        .executeTakeFirst(),
    READ_ONLY,
  );
}

/** The sessions of one conversation, oldest first. */
export function listConversationSessions(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<SessionRow[]> {
  return withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('sessions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('conversation_id', '=', conversationId)
        .orderBy('started_at')
        .orderBy('id')
        .execute(),
    READ_ONLY,
  );
}

/**
 * SPEC §13.3 lineage: from `sessionId`, repeatedly step to the child with the newest `started_at` (ties: the
 * greatest id), at most 32 hops; returns the last session reached (the session itself when it has no child).
 * The caller decides when to resume there (a session that ended with `end_reason = 'compression'`).
 * Throws SessionNotFoundError when `sessionId` does not exist for the tenant.
 */
export async function newestDescendant(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<SessionRow> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const result = await sql<SessionRow>`
      WITH RECURSIVE chain (id, hops) AS (
        SELECT s.id, 0 FROM sessions s WHERE s.tenant_id = ${tenantId} AND s.id = ${sessionId}
        UNION ALL
        SELECT child.id, chain.hops + 1
          FROM chain
          CROSS JOIN LATERAL (
            SELECT c.id FROM sessions c
             WHERE c.tenant_id = ${tenantId} AND c.parent_session_id = chain.id
             ORDER BY c.started_at DESC, c.id DESC
             LIMIT 1
          ) AS child
         WHERE chain.hops < ${MAX_LINEAGE_HOPS}
      )
      SELECT s.* FROM chain JOIN sessions s ON s.tenant_id = ${tenantId} AND s.id = chain.id
       ORDER BY chain.hops DESC
       LIMIT 1`.execute(tx);
      const newest = result.rows[0];
      if (!newest) throw new SessionNotFoundError(sessionId);
      return newest;
    },
    READ_ONLY,
  );
}

const NUMBERED_TITLE = / #\d+$/;

/** SPEC §13.3 titles: `<title>` without a trailing ` #<digits>`. */
export function titleBase(title: string): string {
  return title.replace(NUMBERED_TITLE, '');
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * SPEC §13.3 titles: null → null; else `<base> #N` with N = 1 + the highest k among the tenant's titles equal to
 * `<base> #k` (`<base>` itself counts as 1). Only canonical numbers count as k (`#2`, not `#02`).
 */
export async function nextRotationTitle(
  tx: Kysely<Database>,
  tenantId: string,
  oldTitle: string | null,
): Promise<string | null> {
  if (oldTitle === null) return null;
  const base = titleBase(oldTitle);
  const rows = await tx
    .selectFrom('sessions')
    .select('title')
    .where('tenant_id', '=', tenantId)
    .where((eb) => eb.or([eb('title', '=', base), eb('title', 'like', `${escapeLike(base)} #%`)]))
    .execute();
  let highest = 1n;
  for (const { title } of rows) {
    const suffix = title?.slice(base.length + 2) ?? '';
    if (title?.startsWith(`${base} #`) && /^[1-9]\d*$/.test(suffix)) {
      const k = BigInt(suffix);
      if (k > highest) highest = k;
    }
  }
  return `${base} #${highest + 1n}`;
}

/**
 * SPEC §13.3 rotation: the child of `old` (same conversation, platform, model and provider, numbered title,
 * compression_count + 1) with id `id`, and `old` ended with reason 'compression' unless it ended before (the first
 * end reason wins). Throws when the id is taken. Runs in the caller's transaction.
 */
export async function rotateSession(tx: Kysely<Database>, tenantId: string, old: SessionRow, id: string) {
  const created = await insertSessionIfAbsent(tx, tenantId, {
    id,
    conversationId: old.conversation_id,
    source: old.source,
    model: old.model,
    provider: old.provider,
    title: await nextRotationTitle(tx, tenantId, old.title),
    parentSessionId: old.id,
    compressionCount: old.compression_count + 1,
    responsesNativeDisabled: old.responses_native_disabled,
  });
  if (!created) throw new Error(`rotation: session id ${id} is already taken`);
  await tx
    .updateTable('sessions')
    .set({ ended_at: sql`now()`, end_reason: 'compression' })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', old.id)
    .where('ended_at', 'is', null)
    .execute();
  return created;
}

/** Takes the per-session write lock (SPEC §13.6: appends and commits of one session run one at a time). */
export async function lockSession(tx: Kysely<Database>, tenantId: string, sessionId: string): Promise<SessionRow> {
  const session = await tx
    .selectFrom('sessions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', sessionId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!session) throw new SessionNotFoundError(sessionId);
  return session;
}

/**
 * SPEC §15.1 rejection: the provider refused `context_management`, so the feature stays off for the rest of the
 * session (kept on its row; a rotation's new session inherits it). Idempotent.
 */
export async function disableResponsesNative(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<void> {
  await withTenantWrite(db, tenantId, (tx) =>
    tx
      .updateTable('sessions')
      .set({ responses_native_disabled: true })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId)
      .where('responses_native_disabled', '=', false)
      .execute(),
  );
}

/** Whether SPEC §15.1 native compaction was turned off for the session after a rejection. */
export async function responsesNativeDisabled(db: Kysely<Database>, tenantId: string, sessionId: string) {
  const row = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('sessions')
        .select('responses_native_disabled')
        .where('tenant_id', '=', tenantId)
        .where('id', '=', sessionId)
        .executeTakeFirst(),
    READ_ONLY,
  );
  return row?.responses_native_disabled === true;
}

/** One more compaction of the session (its `compression_count` + 1, in the caller's transaction); the new count. */
export async function countCompression(tx: Kysely<Database>, tenantId: string, sessionId: string): Promise<number> {
  const bumped = await tx
    .updateTable('sessions')
    .set({ compression_count: sql`compression_count + 1` })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', sessionId)
    .returning('compression_count')
    .executeTakeFirstOrThrow();
  return bumped.compression_count;
}

/** Anthropic refused the compaction beta on the session's summary route (SPEC §19 `anthropic_native`): stop asking. */
export async function disableAnthropicNative(db: Kysely<Database>, tenantId: string, sessionId: string): Promise<void> {
  await withTenantWrite(db, tenantId, (tx) =>
    tx
      .updateTable('sessions')
      .set({ anthropic_native_disabled: true })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', sessionId)
      .where('anthropic_native_disabled', '=', false)
      .execute(),
  );
}
