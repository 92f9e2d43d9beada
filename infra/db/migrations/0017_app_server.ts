// 0017: Codex app-server sessions (issue #13 §2, SPEC §15.2). Never edit a migration that has landed; add a new one.
//
// - `conversations.codex_thread_id`: the app-server thread that holds the conversation's context (its rollout lives
//   in the provider's CODEX_HOME, so a restarted app-server resumes it by this id).
// - `compactions.boundary_message_id`, `thread_id`, `turn_id`: a compaction the app-server reported is recorded with
//   the transcript position at which it happened (the newest stored message then; no rows change) and the thread
//   and turn that held its `contextCompaction` item.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations ADD COLUMN codex_thread_id text`.execute(db);
  await sql`ALTER TABLE compactions ADD COLUMN boundary_message_id bigint,
                                    ADD COLUMN thread_id text,
                                    ADD COLUMN turn_id text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions DROP COLUMN IF EXISTS boundary_message_id,
                                    DROP COLUMN IF EXISTS thread_id,
                                    DROP COLUMN IF EXISTS turn_id`.execute(db);
  await sql`ALTER TABLE conversations DROP COLUMN IF EXISTS codex_thread_id`.execute(db);
}
