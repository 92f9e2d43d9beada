// Reads of message rows without their content, for a compaction that already holds the messages it read: the
// commit's active row states (SPEC §13.2 / §13.3, compactionCommit/shared.ts) and the pins reassemble needs (SPEC §19
// `rehydrate_pinned`).
import { type Kysely, sql } from 'kysely';
import { selectActiveInOrder } from '../messages.js';
import type { Database } from '../schema.js';
import { READ_ONLY, withTenant } from '../tenant.js';

/** A transcript row without its content: what a commit needs of it besides the message it already holds. */
export interface ActiveRowState {
  id: number;
  sessionId: string;
  position: number;
  pinned: boolean;
  extra: Record<string, unknown> | null;
  hasRawMessage: boolean;
}

/** The session's active rows in position order, without their content (the text columns are not read). */
export async function selectActiveRowStates(
  tx: Kysely<Database>,
  tenantId: string,
  sessionId: string,
): Promise<ActiveRowState[]> {
  const rows = await selectActiveInOrder(tx, tenantId, sessionId)
    .select(['m.id', 's.session_id', 's.position', 'm.pinned', 'm.extra'])
    .select(sql<boolean>`m.raw_message IS NOT NULL`.as('has_raw'))
    .execute();
  return rows.map((row) => ({
    id: row.id,
    sessionId: row.session_id,
    position: row.position,
    pinned: row.pinned,
    extra: row.extra,
    hasRawMessage: row.has_raw,
  }));
}

/** Whether an operator pinned each row, in the order of `ids` (no content read); undefined for an id not visible. */
export async function loadPinsByIds(
  db: Kysely<Database>,
  tenantId: string,
  ids: readonly number[],
): Promise<(boolean | undefined)[]> {
  if (ids.length === 0) return [];
  const rows = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('messages')
        .select(['id', 'pinned'])
        .where('tenant_id', '=', tenantId)
        .where(sql<boolean>`id = ANY(${[...new Set(ids)]}::bigint[])`)
        .execute(),
    READ_ONLY,
  );
  const byId = new Map(rows.map((row) => [Number(row.id), row.pinned]));
  return ids.map((id) => byId.get(id));
}
