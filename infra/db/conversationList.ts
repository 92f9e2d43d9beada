// A tenant's conversations, newest updated first, paged by a keyset cursor (issue #14 §6 data lifecycle). Filters:
// a title substring (case-insensitive, LIKE wildcards taken literally), the model, updated after / before. The
// cursor is the last row's (updated_at in whole microseconds, id): exact, so rows that share a millisecond are neither
// skipped nor repeated (a JS Date would round them). Reads run as the tenant role (row-level security, DESIGN.md §4).
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';

export interface ConversationListFilter {
  titleContains?: string;
  model?: string;
  updatedAfter?: Date;
  updatedBefore?: Date;
}

/** Where the previous page ended: the last row's updated_at (microseconds since the epoch, as text) and id. */
export interface ConversationKey {
  updatedUs: string;
  id: string;
}

export interface ListedConversation {
  id: string;
  currentSessionId: string;
  model: string;
  provider: string | null;
  source: string;
  title: string | null;
  createdAt: Date;
  updatedAt: Date;
  activeMessages: number;
  activeTokens: number;
  compactions: number;
  /** The sort key of the row (the cursor of the page that ends here). */
  key: ConversationKey;
}

/** `%` and `_` of the user's text match themselves (ILIKE's escape character is `\`). */
export const likeLiteral = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const US = sql`interval '1 microsecond'`;

/** One page (`limit` rows) after `after`, plus whether more rows follow. */
export function listConversations(
  db: Kysely<Database>,
  tenantId: string,
  filter: ConversationListFilter,
  limit: number,
  after: ConversationKey | null,
): Promise<{ rows: ListedConversation[]; more: boolean }> {
  return withTenant(
    db,
    tenantId,
    async (tx) => {
      let query = tx
        .selectFrom('conversations as c')
        .innerJoin('sessions as s', (join) =>
          join.onRef('s.id', '=', 'c.current_session_id').on('s.tenant_id', '=', tenantId),
        )
        .where('c.tenant_id', '=', tenantId)
        .select([
          'c.id',
          'c.current_session_id',
          'c.model',
          'c.provider',
          'c.source',
          'c.title',
          'c.created_at',
          'c.updated_at',
          'c.active_messages',
          'c.active_tokens',
          's.compression_count',
          sql<string>`(extract(epoch from c.updated_at) * 1000000)::bigint::text`.as('updated_us'),
        ]);
      if (filter.titleContains !== undefined)
        query = query.where(sql<boolean>`c.title ILIKE ${`%${likeLiteral(filter.titleContains)}%`}`);
      if (filter.model !== undefined) query = query.where('c.model', '=', filter.model);
      if (filter.updatedAfter) query = query.where('c.updated_at', '>', filter.updatedAfter);
      if (filter.updatedBefore) query = query.where('c.updated_at', '<', filter.updatedBefore);
      if (after)
        query = query.where(
          sql<boolean>`(c.updated_at, c.id) < ('epoch'::timestamptz + ${after.updatedUs}::bigint * ${US}, ${after.id})`,
        );
      const rows = await query
        .orderBy('c.updated_at', 'desc')
        .orderBy('c.id', 'desc')
        .limit(limit + 1)
        .execute();
      return {
        more: rows.length > limit,
        rows: rows.slice(0, limit).map((r) => ({
          id: r.id,
          currentSessionId: r.current_session_id,
          model: r.model,
          provider: r.provider,
          source: r.source,
          title: r.title,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
          activeMessages: Number(r.active_messages),
          activeTokens: Number(r.active_tokens),
          compactions: Number(r.compression_count),
          key: { updatedUs: r.updated_us, id: r.id },
        })),
      };
    },
    READ_ONLY,
  );
}
