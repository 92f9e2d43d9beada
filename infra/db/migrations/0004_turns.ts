// 0004: agent turns run by the system (chat backend mode) with their usage and cache economics, and the cache
// telemetry of each compaction (issue: per turn and per compaction, cache read / write / uncached input tokens;
// tokens re-written to cache by the first post-compaction request and turns until cache reads recovered).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE turns (
      tenant_id text NOT NULL REFERENCES tenants (id),
      id text NOT NULL,
      session_id text NOT NULL,
      conversation_id text NOT NULL,
      model text NOT NULL,
      provider text,
      message_id bigint,
      finish_reason text,
      prompt_tokens integer NOT NULL DEFAULT 0,
      completion_tokens integer NOT NULL DEFAULT 0,
      cache_read_tokens integer NOT NULL DEFAULT 0,
      cache_write_tokens integer NOT NULL DEFAULT 0,
      uncached_input_tokens integer NOT NULL DEFAULT 0,
      caching_enabled boolean NOT NULL DEFAULT false,
      after_compaction_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
    )`.execute(db);
  await sql`CREATE INDEX turns_conversation ON turns (tenant_id, conversation_id, created_at)`.execute(db);
  await sql`ALTER TABLE turns ENABLE ROW LEVEL SECURITY`.execute(db);
  await sql`
    CREATE POLICY tenant_isolation ON turns
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true))`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE ON turns TO dc_tenant`.execute(db);

  await sql`ALTER TABLE compactions ADD COLUMN cache_rewrite_tokens integer`.execute(db);
  await sql`ALTER TABLE compactions ADD COLUMN cache_recovery_turns integer`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions DROP COLUMN IF EXISTS cache_rewrite_tokens`.execute(db);
  await sql`ALTER TABLE compactions DROP COLUMN IF EXISTS cache_recovery_turns`.execute(db);
  await sql`DROP TABLE IF EXISTS turns`.execute(db);
}
