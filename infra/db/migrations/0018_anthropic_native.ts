// 0018: Anthropic compaction blocks as the Phase 3 backend (issue #13 §3, SPEC §19 `summary_backend: anthropic_native`).
// Never edit a migration that has landed; add a new one.
//
// - `compactions.native_summary`: the signed `compaction` block the summary came from and the route that issued it
//   (requests to that route send the block first, in place of the messages it summarises).
// - `compactions.native_fallback`: why an `anthropic_native` compaction used the local summariser instead.
// - `compactions.summary_usage`: what the provider-side summary cost (its `usage.iterations` compaction entries).
// - `sessions.anthropic_native_disabled`: the route refused the beta; the session stops asking (like §15.1's flag).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions ADD COLUMN native_summary jsonb,
                                    ADD COLUMN native_fallback text,
                                    ADD COLUMN summary_usage jsonb`.execute(db);
  await sql`ALTER TABLE sessions ADD COLUMN anthropic_native_disabled boolean NOT NULL DEFAULT false`.execute(db);
  // A turn to an Anthropic route looks up its session's newest block summary (infra/db/nativeSummaries.ts).
  await sql`CREATE INDEX compactions_native_summary
              ON compactions (tenant_id, (coalesce(new_session_id, session_id)), seq DESC)
           WHERE status = 'committed' AND native_summary IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS compactions_native_summary`.execute(db);
  await sql`ALTER TABLE sessions DROP COLUMN IF EXISTS anthropic_native_disabled`.execute(db);
  await sql`ALTER TABLE compactions DROP COLUMN IF EXISTS native_summary,
                                    DROP COLUMN IF EXISTS native_fallback,
                                    DROP COLUMN IF EXISTS summary_usage`.execute(db);
}
