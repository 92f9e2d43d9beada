// Compaction records (SPEC §13.1): one row per compaction, keyed by the id generated in workflow code. Every phase
// writes its result here, so each phase is idempotent and a failed compaction can be replayed from its record.
import { type Kysely, sql } from 'kysely';
import {
  COMMITTED_STATUSES,
  COMPACTION_STATUSES,
  type CommitNote,
  type CompactionSummaryBackend,
  type NativeFallbackReason,
  type NativeSummary,
  type StoredCompactionStatus,
  type StoredCompactionTrigger,
  type SummaryUsage,
} from '../../contracts/compaction.js';
import type { CompactionRow, Database } from './schema.js';
import { CompactionNotFoundError } from './storeErrors.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

export { COMMITTED_STATUSES };

export function isCommitted(record: Pick<CompactionRow, 'status'>): boolean {
  return (COMMITTED_STATUSES as readonly string[]).includes(record.status);
}

/** pg returns bigint[] elements as strings: read the row ids back as numbers. */
export function normalizeCompactionRow(row: CompactionRow): CompactionRow {
  return { ...row, compacted_row_ids: (row.compacted_row_ids ?? []).map(Number) };
}

export interface NewCompaction {
  id: string;
  sessionId: string;
  conversationId: string;
  seq: number;
  trigger: StoredCompactionTrigger;
  inPlace: boolean;
  focusTopic?: string | null;
  previousSummary?: string | null;
}

/** Idempotent: a second call with the same id returns the stored record unchanged. */
export function createCompactionRecord(
  db: Kysely<Database>,
  tenantId: string,
  record: NewCompaction,
): Promise<CompactionRow> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const inserted = await tx
      .insertInto('compactions')
      .values({
        tenant_id: tenantId,
        id: record.id,
        session_id: record.sessionId,
        conversation_id: record.conversationId,
        seq: record.seq,
        trigger: record.trigger,
        in_place: record.inPlace,
        focus_topic: record.focusTopic ?? null,
        previous_summary: record.previousSummary ?? null,
      })
      .onConflict((oc) => oc.columns(['tenant_id', 'id']).doNothing())
      .returningAll()
      .executeTakeFirst();
    const row = inserted ?? (await selectCompaction(tx, tenantId, record.id));
    if (!row) throw new Error(`Compaction ${record.id} could not be created`);
    return normalizeCompactionRow(row);
  });
}

export function selectCompaction(tx: Kysely<Database>, tenantId: string, id: string) {
  return tx
    .selectFrom('compactions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Locks the record for the rest of the transaction (after the session lock: sessions, then compactions, in every
 * writer). Throws when it does not exist or, with `sessionId`, when it belongs to another session.
 */
export async function lockCompaction(
  tx: Kysely<Database>,
  tenantId: string,
  id: string,
  sessionId?: string,
): Promise<CompactionRow> {
  const row = await tx
    .selectFrom('compactions')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (!row) throw new CompactionNotFoundError(id);
  if (sessionId !== undefined && row.session_id !== sessionId) {
    throw new CompactionNotFoundError(id, `belongs to session ${row.session_id}, not ${sessionId}`);
  }
  return normalizeCompactionRow(row);
}

export function commitNoteOf(record: Pick<CompactionRow, 'stats'>): CommitNote | undefined {
  return record.stats?.commit ?? undefined;
}

export async function getCompaction(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
): Promise<CompactionRow | undefined> {
  const row = await withTenant(db, tenantId, (tx) => selectCompaction(tx, tenantId, id), READ_ONLY);
  return row && normalizeCompactionRow(row);
}

/** A JSON column value: an object, or its JSON text. */
type Json = object | string;

/** Columns a phase may write. JSON columns take objects (or JSON text); `updated_at` is set to now. */
export interface CompactionPatch {
  status?: StoredCompactionStatus;
  plan?: Json | null;
  prune_result?: Json | null;
  summary?: string | null;
  summary_body?: string | null;
  fallback_used?: boolean;
  failure_class?: string | null;
  stats?: Json | null;
  replayable?: boolean;
  compacted_row_ids?: number[];
  new_session_id?: string | null;
  in_place?: boolean;
  focus_topic?: string | null;
  previous_summary?: string | null;
  error?: string | null;
  attempts?: number;
  completed_at?: Date | null;
  cache_rewrite_tokens?: number | null;
  cache_recovery_turns?: number | null;
  /** migrations/0007: who wrote the summary; the quality gate's retention shares. */
  summary_backend?: CompactionSummaryBackend | null;
  retention_before?: number | null;
  retention_after?: number | null;
  /** migrations/0018: an `anthropic_native` summary's block, or why the local summariser wrote it; its cost. */
  native_summary?: NativeSummary | null;
  native_fallback?: NativeFallbackReason | null;
  summary_usage?: SummaryUsage | null;
  /** migrations/0022: the engine that compressed (SPEC §10.3), or why the built-in compressor did instead. */
  engine?: string;
  engine_fallback?: string | null;
}

const JSON_COLUMNS = new Set(['plan', 'prune_result', 'stats', 'native_summary', 'summary_usage']);

function patchColumns(patch: CompactionPatch): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    columns[key] = JSON_COLUMNS.has(key) && value !== null && typeof value !== 'string' ? JSON.stringify(value) : value;
  }
  return columns;
}

/** Applies the patch; returns the updated record, or undefined when there is none with this id. */
export function updateCompaction(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
  patch: CompactionPatch,
): Promise<CompactionRow | undefined> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const row = await tx
      .updateTable('compactions')
      .set({ ...patchColumns(patch), updated_at: sql`now()` })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && normalizeCompactionRow(row);
  });
}

export interface ListCompactionsOptions {
  /** Statuses to list (values that are no status match nothing); empty or absent: all. */
  status?: readonly string[];
  sessionId?: string;
  limit?: number;
  offset?: number;
}

const STATUSES: ReadonlySet<string> = new Set(COMPACTION_STATUSES);

/** The statuses a list filter asks for (null: no filter; values that are no status are dropped: no row has them). */
function statusFilter(wanted: readonly string[] | undefined): StoredCompactionStatus[] | null {
  if (!wanted || wanted.length === 0) return null;
  return wanted.filter((s): s is StoredCompactionStatus => STATUSES.has(s));
}

/** Newest first (created_at, then id). */
export async function listCompactions(
  db: Kysely<Database>,
  tenantId: string,
  options: ListCompactionsOptions = {},
): Promise<CompactionRow[]> {
  const status = statusFilter(options.status);
  if (status?.length === 0) return [];
  const rows = await withTenant(
    db,
    tenantId,
    (tx) => {
      let query = tx.selectFrom('compactions').selectAll().where('tenant_id', '=', tenantId);
      if (status) query = query.where('status', 'in', status);
      if (options.sessionId !== undefined) query = query.where('session_id', '=', options.sessionId);
      return query
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(options.limit ?? 50)
        .offset(options.offset ?? 0)
        .execute();
    },
    READ_ONLY,
  );
  return rows.map(normalizeCompactionRow);
}

/** The session's newest compaction record (highest seq, then newest), optionally among some statuses only. */
export async function latestCompactionOfSession(
  db: Kysely<Database>,
  tenantId: string,
  sessionId: string,
  options: { status?: readonly StoredCompactionStatus[] } = {},
): Promise<CompactionRow | undefined> {
  const row = await withTenant(
    db,
    tenantId,
    (tx) => {
      let query = tx
        .selectFrom('compactions')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('session_id', '=', sessionId);
      if (options.status && options.status.length > 0) query = query.where('status', 'in', [...options.status]);
      return query
        .orderBy('seq', 'desc')
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst();
    },
    READ_ONLY,
  );
  return row && normalizeCompactionRow(row);
}
