// The idempotency keys a drop-in dialect gave a conversation's messages (issue #12; workers/gateway/dropin/history.ts
// builds them from position and content): which of a history's keys are stored, and how many the dialect stored.
// Keys stay on compacted rows, so a client's full history still matches after a compaction.
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

export interface StoredHistoryKeys {
  /** The given keys that are stored in the conversation. */
  present: Set<string>;
  /** How many messages of the conversation carry a key of the dialect. */
  stored: number;
}

export function storedHistoryKeys(
  db: Kysely<Database>,
  tenantId: string,
  conversationId: string,
  dialect: string,
  keys: readonly string[],
): Promise<StoredHistoryKeys> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      const found = await tx
        .selectFrom('messages')
        .select('idempotency_key')
        .where('tenant_id', '=', tenantId)
        .where('conversation_id', '=', conversationId)
        .where('idempotency_key', '=', sql<string>`ANY(${keys as string[]}::text[])`)
        .execute();
      const count = await tx
        .selectFrom('messages')
        .select(sql<number>`count(*)::int`.as('stored'))
        .where('tenant_id', '=', tenantId)
        .where('conversation_id', '=', conversationId)
        .where(sql<boolean>`starts_with(idempotency_key, ${`${dialect}:`})`)
        .executeTakeFirst();
      return {
        present: new Set(found.flatMap((r) => (r.idempotency_key === null ? [] : [r.idempotency_key]))),
        stored: count?.stored ?? 0,
      };
    },
    READ_ONLY,
  );
}
