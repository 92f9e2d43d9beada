// What the JSONL export of a conversation reads besides its messages (issue #14 §6; messages: messagePages.ts): the
// conversation's compactions without their phase blobs (plan, prune result, the previous summary — the previous
// compaction's own summary —, compacted row ids — each archived message names its compaction —, a native block's
// signed payload) and its sessions. Read-only tenant transactions (row-level security, DESIGN.md §4).
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

export interface ExportedCompaction {
  id: string;
  sessionId: string;
  newSessionId: string | null;
  seq: number;
  trigger: string;
  status: string;
  inPlace: boolean;
  focusTopic: string | null;
  summary: string | null;
  summaryBackend: string | null;
  fallbackUsed: boolean;
  failureClass: string | null;
  replayable: boolean;
  stats: unknown;
  error: string | null;
  attempts: number;
  nativeSummary: boolean;
  createdAt: string;
  completedAt: string | null;
}

export function listConversationCompactions(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
): Promise<ExportedCompaction[]> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const rows = await tx
        .selectFrom('compactions')
        .select([
          'id',
          'session_id',
          'new_session_id',
          'seq',
          'trigger',
          'status',
          'in_place',
          'focus_topic',
          'summary',
          'summary_backend',
          'fallback_used',
          'failure_class',
          'replayable',
          'stats',
          'error',
          'attempts',
          'created_at',
          'completed_at',
        ])
        .select((eb) => eb('native_summary', 'is not', null).as('has_native_summary'))
        .where('tenant_id', '=', tenantId)
        .where('conversation_id', '=', conversationId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        id: r.id,
        sessionId: r.session_id,
        newSessionId: r.new_session_id,
        seq: r.seq,
        trigger: r.trigger,
        status: r.status,
        inPlace: r.in_place,
        focusTopic: r.focus_topic,
        summary: r.summary,
        summaryBackend: r.summary_backend,
        fallbackUsed: r.fallback_used,
        failureClass: r.failure_class,
        replayable: r.replayable,
        stats: r.stats,
        error: r.error,
        attempts: r.attempts,
        nativeSummary: r.has_native_summary === true,
        createdAt: r.created_at.toISOString(),
        completedAt: r.completed_at ? r.completed_at.toISOString() : null,
      }));
    },
    READ_ONLY,
  );
}
