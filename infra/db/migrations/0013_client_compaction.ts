// 0013: a drop-in client's own compaction (issue #12 "Client-side compaction is recognised"). Never edit a migration
// that has landed; add a new one.
//
// - `compactions.trigger` may be 'client': the record of a compaction the client ran itself (its summary request was
//   passed through; the shorter history it sent afterwards became a new session of the same conversation).
// - `conversations.client_floor`: the highest message id of the conversation when the latest client compaction was
//   committed. A drop-in history is matched against the rows above it only: what the client sends after its own
//   compaction is the new session's transcript, not an edit of the old one.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions DROP CONSTRAINT compactions_trigger_check`.execute(db);
  await sql`
    ALTER TABLE compactions ADD CONSTRAINT compactions_trigger_check
      CHECK ("trigger" IN ('preflight', 'post_response', 'manual', 'hygiene', 'codex_app_server', 'client'))`.execute(
    db,
  );
  await sql`ALTER TABLE conversations ADD COLUMN client_floor bigint NOT NULL DEFAULT 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations DROP COLUMN IF EXISTS client_floor`.execute(db);
  await sql`ALTER TABLE compactions DROP CONSTRAINT compactions_trigger_check`.execute(db);
  await sql`
    ALTER TABLE compactions ADD CONSTRAINT compactions_trigger_check
      CHECK ("trigger" IN ('preflight', 'post_response', 'manual', 'hygiene', 'codex_app_server'))`.execute(db);
}
