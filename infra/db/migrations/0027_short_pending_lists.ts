// 0027: the search indexes' pending lists are cleaned at 1 MB instead of PostgreSQL's 4 MB (issue #11 §1, SPEC §14.2,
// DESIGN.md §4). Never edit a migration that has landed; add a new one.
//
// A GIN index with fastupdate (the default) takes new entries into a pending list, and the insert that finds the list
// over `gin_pending_list_limit` merges it into the index before its transaction goes on. At 4 MB that merge took
// 50–100 ms, so under sustained ingest (`bench:load`, 10,000 conversations, 64 clients) about 2–3 transactions a
// second waited for it, each with every batch committed in it (infra/db/appendGroups.ts): group transactions' p99
// 56 ms, accept p99 122 ms. At 1 MB each merge is about a quarter as long, four times as often, and merges as many
// entries in all: group p99 40 ms, accept p99 108 ms, at the same throughput. Searches read the whole pending list
// too: a shorter list costs them less under write load.
import { type Kysely, sql } from 'kysely';

const SEARCH_INDEXES = ['messages_search_tsv', 'messages_search_trgm', 'messages_search_cjk'];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const index of SEARCH_INDEXES) {
    await sql`ALTER INDEX ${sql.id(index)} SET (gin_pending_list_limit = 1024)`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const index of SEARCH_INDEXES)
    await sql`ALTER INDEX ${sql.id(index)} RESET (gin_pending_list_limit)`.execute(db);
}
