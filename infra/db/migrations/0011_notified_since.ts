// 0011: what the gateway notified since the workflow's rules (issue #11 §2, engine/quietBatches.ts). Never edit a
// migration that has landed; add a new one.
//
// - `notified_since`: while the workflow has not published since the gateway's latest notifications, the rules of
//   `quiet_rules` are void for quiet batches, but a chat turn may still run in the gateway when nothing the workflow
//   decides on those notifications can change what the model is sent. This column says so: the notifications since
//   the rules of `epoch` were for the batches up to `toSeq`, their highest usage reading, and whether none of them
//   could start a hygiene compaction. Null: unknown (a manual compaction, a model switch, a compaction commit or a
//   tenant policy change since, or an append the gateway did not judge) until the workflow publishes again.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations ADD COLUMN notified_since jsonb`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations DROP COLUMN IF EXISTS notified_since`.execute(db);
}
