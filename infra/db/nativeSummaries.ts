// Where a session's transcript starts from an Anthropic compaction block (SPEC §19 `summary_backend: anthropic_native`,
// issue #13 §3): the newest committed compaction of the session whose summary came from a block, the row that holds
// its text and that text. Requests to the block's route send the block in place of that row and the rows before it
// (infra/llm/anthropicCompaction.ts); every other request sends the readable text, as for any summary.
import { type Kysely, sql } from 'kysely';
import type { NativeSummary } from '../../contracts/compaction.js';
import type { Database } from './schema.js';

export interface StoredNativeSummary {
  compactionId: string;
  native: NativeSummary;
  /** The summary text the row starts with (SUMMARY_PREFIX, newline, body). */
  summaryText: string;
  /** The committed body: the block's content and what the host added (gate items, archive pointer). */
  summaryBody: string;
  /** The row holding the summary when the compaction committed. */
  summaryRowId: number;
}

/** In the caller's tenant transaction: the session's newest committed block summary, or null. */
export async function selectNativeSummary(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<StoredNativeSummary | null> {
  const row = await tx
    .selectFrom('compactions')
    .select([
      'id',
      'native_summary',
      'summary',
      'summary_body',
      sql<string | null>`stats -> 'commit' ->> 'summaryRowId'`.as('summary_row_id'),
    ])
    .where('tenant_id', '=', tenantId)
    .where('status', '=', 'committed')
    .where('native_summary', 'is not', null)
    // The session the compaction's transcript lives in (the new one after a rotation): migrations/0018's index.
    .where(sql<string>`coalesce(new_session_id, session_id)`, '=', sessionId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!row?.native_summary || row.summary === null || row.summary_body === null || row.summary_row_id === null) {
    return null;
  }
  return {
    compactionId: row.id,
    native: row.native_summary,
    summaryText: row.summary,
    summaryBody: row.summary_body,
    summaryRowId: Number(row.summary_row_id),
  };
}
