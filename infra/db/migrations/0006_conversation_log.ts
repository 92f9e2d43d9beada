// 0006: PostgreSQL is the conversation log (DESIGN.md §3–§4). Never edit a migration that has landed.
//
// - `conversations`: one row per conversation — its current session, model, running totals of the live transcript,
//   a `version` bumped by every change of the transcript (append, compaction commit, replay swap) under the row's
//   lock, `batch_seq` counting the accepted batches, `applied_seq` up to which the conversation workflow has taken
//   every decision due, and the status snapshot the workflow publishes (`state`). The gateway commits message
//   batches against this row and answers from it; the workflow is told with a content-free notification.
// - `messages.conversation_id`: idempotency keys are unique per conversation (not per session), so a client retry is
//   recognised whichever session of the conversation holds the original.
// - `messages.raw_message`: the exact message as JSON text when it holds characters PostgreSQL's text and jsonb
//   cannot store (NUL, unpaired surrogates). The other columns then hold a sanitised copy (U+FFFD) for search; a
//   read returns the raw message, so such content round-trips unchanged (issue #9 §1).
// - `compactions (tenant_id, created_at)`: the per-tenant frequency breaker counts a tenant's recent compactions.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE conversations (
      tenant_id text NOT NULL REFERENCES tenants (id),
      id text NOT NULL,
      current_session_id text NOT NULL,
      model text NOT NULL,
      provider text,
      context_length integer,
      source text NOT NULL DEFAULT 'api',
      title text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      version bigint NOT NULL DEFAULT 0,
      batch_seq bigint NOT NULL DEFAULT 0,
      applied_seq bigint NOT NULL DEFAULT 0,
      active_messages integer NOT NULL DEFAULT 0,
      active_tokens bigint NOT NULL DEFAULT 0,
      state jsonb,
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, current_session_id) REFERENCES sessions (tenant_id, id)
    )`.execute(db);
  await sql`CREATE INDEX conversations_updated ON conversations (tenant_id, updated_at DESC)`.execute(db);
  await sql`ALTER TABLE conversations ENABLE ROW LEVEL SECURITY`.execute(db);
  await sql`
    CREATE POLICY tenant_isolation ON conversations
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true))`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE ON conversations TO dc_tenant`.execute(db);

  await sql`ALTER TABLE messages ADD COLUMN conversation_id text`.execute(db);
  await sql`ALTER TABLE messages ADD COLUMN raw_message text`.execute(db);
  await sql`
    UPDATE messages m SET conversation_id = s.conversation_id
      FROM sessions s WHERE s.tenant_id = m.tenant_id AND s.id = m.session_id`.execute(db);
  await sql`ALTER TABLE messages ALTER COLUMN conversation_id SET NOT NULL`.execute(db);
  await sql`DROP INDEX messages_idempotency`.execute(db);
  await sql`CREATE UNIQUE INDEX messages_idempotency ON messages (tenant_id, conversation_id, idempotency_key)
            WHERE idempotency_key IS NOT NULL`.execute(db);

  // Conversations stored before this migration: the current session is the newest one not ended (else the newest).
  await sql`
    INSERT INTO conversations (tenant_id, id, current_session_id, model, provider, source, title, created_at,
                               version, active_messages, active_tokens)
    SELECT DISTINCT ON (s.tenant_id, s.conversation_id)
           s.tenant_id, s.conversation_id, s.id, coalesce(s.model, 'default-model'), s.provider, s.source, s.title,
           s.started_at, 1,
           (SELECT count(*) FROM messages m WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id AND m.active),
           (SELECT coalesce(sum(m.token_estimate), 0) FROM messages m
             WHERE m.tenant_id = s.tenant_id AND m.session_id = s.id AND m.active)
      FROM sessions s
     ORDER BY s.tenant_id, s.conversation_id, (s.ended_at IS NULL) DESC, s.started_at DESC, s.id DESC`.execute(db);

  await sql`CREATE INDEX compactions_recent ON compactions (tenant_id, created_at DESC)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS compactions_recent`.execute(db);
  await sql`DROP INDEX IF EXISTS messages_idempotency`.execute(db);
  await sql`CREATE UNIQUE INDEX messages_idempotency ON messages (tenant_id, session_id, idempotency_key)
            WHERE idempotency_key IS NOT NULL`.execute(db);
  await sql`ALTER TABLE messages DROP COLUMN IF EXISTS raw_message, DROP COLUMN IF EXISTS conversation_id`.execute(db);
  await sql`DROP TABLE IF EXISTS conversations`.execute(db);
}
