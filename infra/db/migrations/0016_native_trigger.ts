// 0016: `compactions.trigger` may be 'responses_native' (issue #13 §1, SPEC §15.1): the record of a checkpoint the
// OpenAI Responses server made — no rows change; it carries the cache economics measured after it, as a local
// compaction's record does. Never edit a migration that has landed; add a new one.
import { type Kysely, sql } from 'kysely';

const TRIGGERS = ['preflight', 'post_response', 'manual', 'hygiene', 'codex_app_server', 'client'];

async function allow(db: Kysely<unknown>, triggers: readonly string[]): Promise<void> {
  await sql`ALTER TABLE compactions DROP CONSTRAINT compactions_trigger_check`.execute(db);
  await sql`
    ALTER TABLE compactions ADD CONSTRAINT compactions_trigger_check
      CHECK ("trigger" IN (${sql.join(triggers.map((t) => sql.lit(t)))}))`.execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await allow(db, [...TRIGGERS, 'responses_native']);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM compactions WHERE "trigger" = 'responses_native'`.execute(db);
  await allow(db, TRIGGERS);
}
