// Anthropic compaction blocks around one turn (issue #13 §3, SPEC §19 `summary_backend: anthropic_native`), for the
// turn runner (turnRunner.ts) wherever it runs. A turn to an Anthropic route whose session's newest summary came from a
// block this route issued (provider, base URL, account) starts from that block: the system prompt, the block (and
// what the host added to its summary), then the summary row's own content and every row after it; the rows before
// it are the ones the block's request summarised. Any other turn sends the transcript as stored, summary text included.
import type { Kysely } from 'kysely';
import { sameOrigin } from '../engine/nativeCompaction.js';
import type { StoredMessage } from '../infra/db/messages.js';
import { selectNativeSummary } from '../infra/db/nativeSummaries.js';
import type { Database } from '../infra/db/schema.js';
import { READ_ONLY, withTenant } from '../infra/db/tenant.js';
import {
  type LeadingCompaction,
  originOf,
  rowsAfterNativeSummary,
  textAfterBlock,
} from '../infra/llm/anthropicCompaction.js';
import type { ProviderClient } from '../infra/llm/clients.js';

export interface BlockRequest {
  /** The rows to prepare and send after the block. */
  rows: StoredMessage[];
  leading: LeadingCompaction;
}

/** The turn's request from its session's block summary; null when the route or the transcript has none to send. */
export async function anthropicBlockRequest(
  db: Kysely<Database>,
  tenantId: string,
  client: ProviderClient,
  rows: readonly StoredMessage[],
): Promise<BlockRequest | null> {
  const sessionId = rows.at(-1)?.sessionId;
  if (client.kind !== 'anthropic' || sessionId === undefined) return null;
  const stored = await withTenant(db, tenantId, (tx) => selectNativeSummary(tx, tenantId, sessionId), READ_ONLY);
  if (!stored || !sameOrigin(stored.native.origin, originOf(client))) return null;
  const after = rowsAfterNativeSummary(rows, { rowId: stored.summaryRowId, summaryText: stored.summaryText });
  if (!after) return null;
  const { block } = stored.native;
  return { rows: after, leading: { block, after: textAfterBlock(stored.summaryBody, block) } };
}
