// Conversation records (migrations/0006): the head of each conversation's log — current session, running totals of
// the live transcript (written under the row's lock: conversationHead.ts) — and what the conversation workflow
// publishes (`applied_seq`, `state`). Reads of the gateway come from here, so they never need the worker (issue #9
// §6). Lock order in every writer: conversation, then session, then compaction.
import { type Kysely, sql } from 'kysely';
import { toStorableJson } from '../../contracts/storableText.js';
import type { QuietRules } from '../../engine/quietBatches.js';
import { type StoredMessage, selectRowsByIds } from './messages.js';
import { pipelined } from './queuedStatements.js';
import type { ConversationRow, Database } from './schema.js';
import { insertSessionIfAbsent } from './sessions.js';
import { ConversationNotFoundError } from './storeErrors.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

export interface NewConversation {
  id: string;
  /** The first session's id (used only when the conversation is new). */
  sessionId: string;
  model: string;
  provider: string | null;
  contextLength: number | null;
  source: string;
  title: string | null;
  /** The quiet rules before the workflow's first publication (migration 0009); null: notify every batch till then. */
  quietRules?: QuietRules | null;
  /** A branch of another conversation (issue #12: a diverging history): the session it branched from. */
  parentSessionId?: string | null;
}

/**
 * Creates the conversation and its first session in one transaction. Idempotent: an existing conversation is
 * returned unchanged (`created: false`), whatever the other fields say.
 */
export async function createConversation(
  db: Kysely<Database>,
  tenantId: string,
  input: NewConversation,
): Promise<{ conversation: ConversationRow; created: boolean }> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const existing = await selectConversation(tx, tenantId, input.id);
    if (existing) return { conversation: existing, created: false };
    await insertSessionIfAbsent(tx, tenantId, {
      id: input.sessionId,
      conversationId: input.id,
      source: input.source,
      model: input.model,
      provider: input.provider,
      title: input.title,
      parentSessionId: input.parentSessionId ?? null,
    });
    const inserted = await tx
      .insertInto('conversations')
      .values({
        tenant_id: tenantId,
        id: input.id,
        current_session_id: input.sessionId,
        model: input.model,
        provider: input.provider,
        context_length: input.contextLength,
        source: input.source,
        title: input.title,
        quiet_rules: input.quietRules ? JSON.stringify(input.quietRules) : null,
      })
      .onConflict((oc) => oc.columns(['tenant_id', 'id']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return { conversation: inserted, created: true };
    return { conversation: (await selectConversation(tx, tenantId, input.id))!, created: false };
  });
}

/** The columns a published status is made of (workers/gateway/logView.ts `statusOf`). */
const STATUS_COLUMNS = [
  'id',
  'model',
  'provider',
  'context_length',
  'current_session_id',
  'active_messages',
  'active_tokens',
  'batch_seq',
  'applied_seq',
  'state',
  'state_seq',
  'notify_epoch',
  'quiet_rules',
  'quiet_fold',
] as const;

/** What of the conversation's row its status shows. */
export type StatusRow = Pick<ConversationRow, (typeof STATUS_COLUMNS)[number]>;

/**
 * The conversation's status columns only, in one read-only transaction: a status read neither receives nor parses
 * the rest of the row (its timestamps, the notified-since record, the Codex thread), ~40 % of its columns.
 */
export function getConversationStatus(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<StatusRow | undefined> {
  return withTenant(
    db,
    tenantId,
    (tx) => conversationWhere(tx, tenantId, conversationId).select(STATUS_COLUMNS).executeTakeFirst(),
    READ_ONLY,
  );
}

/** The conversation, the tenant's only, before its columns are chosen. */
function conversationWhere(tx: Kysely<Database>, tenantId: string, conversationId: string) {
  return tx.selectFrom('conversations').where('tenant_id', '=', tenantId).where('id', '=', conversationId);
}

/** The conversation's row, the tenant's only (conversationHead.ts locks it with this). */
export function conversationQuery(tx: Kysely<Database>, tenantId: string, conversationId: string) {
  return conversationWhere(tx, tenantId, conversationId).selectAll();
}

export function selectConversation(
  tx: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<ConversationRow | undefined> {
  return conversationQuery(tx, tenantId, conversationId).executeTakeFirst();
}

/** The conversation's row and one of its message rows, in one read-only transaction (a turn's status and reply). */
export function getConversationAndRow(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  messageId: number,
): Promise<{ conversation: ConversationRow | undefined; row: StoredMessage | undefined }> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const [conversation, [row]] = await Promise.all([
        selectConversation(tx, tenantId, conversationId),
        selectRowsByIds(tx, tenantId, [messageId]),
      ]);
      return { conversation, row };
    },
    READ_ONLY,
  );
}

export function getConversation(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<ConversationRow | undefined> {
  return withTenant(db, tenantId, (tx) => selectConversation(tx, tenantId, conversationId), READ_ONLY);
}

/**
 * Publishes what the workflow decided, in one statement: the applied position (never back), the status snapshot
 * and the quiet rules, and clears the fold the publication covers. With `policyVersion`, only while the tenant's
 * policy is still at that version (the status was computed with it); the version found is returned either way.
 * A publication older than the one stored (`state_seq`) changes nothing and counts as recorded.
 */
export async function recordApplied(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  applied: {
    appliedSeq: number;
    state: object;
    quietRules?: QuietRules | null;
    policyVersion?: number | null;
    /** Notices as events of the feed (issue #14 §2), written with the publication, once per key. */
    notices?: ReadonlyArray<{ key: string; text: string }>;
  },
): Promise<{ recorded: boolean; policyVersion: number }> {
  const expected = applied.policyVersion ?? null;
  const notices = applied.notices?.length ? JSON.stringify(toStorableJson(applied.notices)) : null;
  // The statement travels with the COMMIT: a publication is one round trip (it is on the way of every turn that
  // waits for the workflow's next rules, workers/gateway/turnWaits.ts).
  const published = await withTenantWrite(db, tenantId, (tx) =>
    pipelined(
      tx,
      sql<{ version: number | null }>`
      WITH policy AS (SELECT policy_version FROM tenants WHERE id = ${tenantId}),
      published AS (
        UPDATE conversations
           SET applied_seq = greatest(applied_seq, ${applied.appliedSeq}::bigint),
               state_seq = ${applied.appliedSeq}::bigint,
               -- The status holds texts from elsewhere (provider error messages, notices): stored as storable JSON.
               state = ${JSON.stringify(toStorableJson(applied.state))}::jsonb,
               quiet_rules = ${applied.quietRules ? JSON.stringify(applied.quietRules) : null}::jsonb,
               -- The quiet batches this publication covers were delivered and applied.
               quiet_fold = CASE WHEN (quiet_fold->>'toSeq')::bigint <= ${applied.appliedSeq}::bigint
                                 THEN NULL ELSE quiet_fold END
         WHERE tenant_id = ${tenantId} AND id = ${conversationId} AND state_seq <= ${applied.appliedSeq}::bigint
           AND (${expected}::integer IS NULL
                OR ${expected}::integer = coalesce((SELECT policy_version FROM policy), 0))
        RETURNING current_session_id),
      noticed AS (
        INSERT INTO events (tenant_id, session_id, conversation_id, type, payload, dedupe_key)
        SELECT ${tenantId}, p.current_session_id, ${conversationId}, 'notice', jsonb_build_object('text', n.text), n.key
          FROM published p, jsonb_to_recordset(${notices}::jsonb) AS n(key text, text text)
         WHERE ${notices}::jsonb IS NOT NULL
        ON CONFLICT (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING)
      SELECT (SELECT policy_version FROM policy) AS version`.compile(tx),
    ),
  );
  const result = await published.result;
  const policyVersion = Number(result.rows[0]?.version ?? 0);
  return { recorded: expected === null || expected === policyVersion, policyVersion };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits, bounded, until batch `seq` is applied (issue #9 §6: a read that must reflect the decisions due for what was
 * accepted) and the workflow has published a status. Returns the conversation then, or null when `timeoutMs` passed
 * first.
 */
export function waitApplied(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  seq: number,
  options: { timeoutMs: number; intervalMs?: number },
): Promise<ConversationRow | null> {
  // Quiet batches advance the applied position at commit; the status also needs the workflow's first snapshot.
  return waitConversation(db, tenantId, conversationId, (row) => row.applied_seq >= seq && row.state !== null, options);
}

/**
 * Reads the conversation's row until `ready` holds for it, bounded: the row then, or null when `timeoutMs` passed
 * first. The pause between reads starts at `intervalMs` (10) and doubles up to `maxIntervalMs` (100). `seen`: the
 * row as the caller just read it, checked instead of a first read.
 */
export async function waitConversation(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  ready: (row: ConversationRow) => boolean,
  options: { timeoutMs: number; intervalMs?: number; maxIntervalMs?: number; seen?: ConversationRow },
): Promise<ConversationRow | null> {
  const deadline = Date.now() + options.timeoutMs;
  let interval = options.intervalMs ?? 10;
  let row = options.seen;
  for (;;) {
    row ??= await getConversation(db, tenantId, conversationId);
    if (!row) throw new ConversationNotFoundError(conversationId);
    if (ready(row)) return row;
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await sleep(Math.min(interval, left));
    interval = Math.min(interval * 2, options.maxIntervalMs ?? 100);
    row = undefined;
  }
}
