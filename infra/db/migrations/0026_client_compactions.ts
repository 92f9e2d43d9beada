// 0026: a drop-in history that opens otherwise after the client's own compaction finds the conversation it compacted
// by the summary it carries (workers/gateway/dropin/clientRotation.ts, issue #12): the tenant's newest client
// compactions, pending or committed, are read on every request whose own conversation is new. An index of them alone,
// so that the read does not walk the tenant's server compactions. Never edit a migration that has landed.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX compactions_client ON compactions (tenant_id, created_at DESC) WHERE trigger = 'client'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX compactions_client`.execute(db);
}
