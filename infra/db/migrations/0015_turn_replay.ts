// 0015: the replay data of a turn's reply (issue #13 §1, SPEC §15.1). Never edit a migration that has landed; add a
// new one.
//
// - `turns.replay`: the `compaction` output items an OpenAI Responses reply came with and the route that issued them
//   (provider, base URL, account fingerprint), kept with the turn record of the reply — written in the reply's own
//   transaction, never in the message's content, so the SPEC §3.2 estimate never counts their encrypted bytes and a
//   search never sees them. Null for every other turn.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns ADD COLUMN replay jsonb`.execute(db);
  // The request path reads the replay data of a transcript's replies by message id.
  await sql`CREATE INDEX turns_replay_message ON turns (tenant_id, message_id) WHERE replay IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS turns_replay_message`.execute(db);
  await sql`ALTER TABLE turns DROP COLUMN IF EXISTS replay`.execute(db);
}
