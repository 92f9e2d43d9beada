// 0020: erasure of a conversation or a whole tenant (issue #14 §6 data lifecycle). Never edit a migration that has
// landed; add a new one.
//
// - `erasures`: the audit trail — who erased what, when, and how many rows of each table; never message content.
//   Owner-only (no grant to the tenant role): the admin reads it; it outlives the tenant it names (no foreign key).
// - `messages (tenant_id, conversation_id, id)`: a conversation's rows in id order without a session in hand — the
//   export pages by it and the erasure deletes by it.
// - The compaction totals behind `/metrics` (0005) stop counting deletes: erasure is the one path that deletes, and a
//   Prometheus counter that went down would read as a reset. Inserts and updates are counted as before.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE erasures (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      scope text NOT NULL CHECK (scope IN ('conversation', 'tenant')),
      tenant_id text NOT NULL,
      conversation_id text,
      requested_by text NOT NULL,
      reason text,
      status text NOT NULL DEFAULT 'rows_deleted' CHECK (status IN ('rows_deleted', 'completed')),
      rows_deleted jsonb NOT NULL,
      workflows_deleted integer NOT NULL DEFAULT 0,
      requested_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz,
      CHECK ((scope = 'conversation') = (conversation_id IS NOT NULL))
    )`.execute(db);
  await sql`CREATE INDEX erasures_tenant ON erasures (tenant_id, id DESC)`.execute(db);
  await sql`REVOKE ALL ON erasures FROM PUBLIC`.execute(db);

  await sql`CREATE INDEX messages_conversation ON messages (tenant_id, conversation_id, id)`.execute(db);

  await sql`DROP TRIGGER compaction_totals_insert_delete ON compactions`.execute(db);
  await sql`
    CREATE TRIGGER compaction_totals_insert AFTER INSERT ON compactions
      FOR EACH ROW EXECUTE FUNCTION dc_count_compaction()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS compaction_totals_insert ON compactions`.execute(db);
  await sql`
    CREATE TRIGGER compaction_totals_insert_delete AFTER INSERT OR DELETE ON compactions
      FOR EACH ROW EXECUTE FUNCTION dc_count_compaction()`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_conversation`.execute(db);
  await sql`DROP TABLE IF EXISTS erasures`.execute(db);
}
