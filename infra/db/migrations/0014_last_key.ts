// 0014: the idempotency key of the conversation's most recently stored message that has one (issue #12 bench: a
// drop-in reply is committed after the client has it, and only right after the history it answers). Never edit a
// migration that has landed; add a new one.
//
// - `conversations.last_key`: written by every append that stores a keyed message, in the statement that adds the
//   batch to the totals (under the row's lock). Rows a compaction writes carry no key and leave it as it is.
//   Conversations stored before this migration get the key of their newest keyed message.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations ADD COLUMN last_key text`.execute(db);
  await sql`
    UPDATE conversations c SET last_key = (
      SELECT m.idempotency_key FROM messages m
       WHERE m.tenant_id = c.tenant_id AND m.conversation_id = c.id AND m.idempotency_key IS NOT NULL
       ORDER BY m.id DESC LIMIT 1)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE conversations DROP COLUMN IF EXISTS last_key`.execute(db);
}
