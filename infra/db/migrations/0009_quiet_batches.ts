// 0009: quiet batches (issue #11 §2, engine/quietBatches.ts). Never edit a migration that has landed; add a new one.
//
// The gateway notifies the conversation workflow only of a batch that could change a decision; the others are
// committed and folded into the conversation's row, and the fold travels with the next notification.
// - `notify_epoch`: bumped by every notification the gateway sends (a loud batch, a manual compaction, a model
//   switch), by every transcript swap (compaction commit, replay) and by a tenant policy change. Rules published for
//   an older epoch are void, so the gateway notifies until the workflow has published again.
// - `quiet_rules`: what the workflow published with its state (null: notify every batch, e.g. while a compaction runs).
// - `quiet_fold`: the summed effect of the quiet batches since the last notification (ids, counts, token readings;
//   no content), taken by the next notification.
// - `state_seq`: the applied position of the published status snapshot. `applied_seq` is also advanced by the gateway
//   for quiet batches, so it no longer guards the snapshot against an older retried write.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE conversations
      ADD COLUMN notify_epoch bigint NOT NULL DEFAULT 0,
      ADD COLUMN quiet_rules jsonb,
      ADD COLUMN quiet_fold jsonb,
      ADD COLUMN state_seq bigint NOT NULL DEFAULT 0`.execute(db);
  await sql`UPDATE conversations SET state_seq = applied_seq`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE conversations
      DROP COLUMN IF EXISTS state_seq,
      DROP COLUMN IF EXISTS quiet_fold,
      DROP COLUMN IF EXISTS quiet_rules,
      DROP COLUMN IF EXISTS notify_epoch`.execute(db);
}
