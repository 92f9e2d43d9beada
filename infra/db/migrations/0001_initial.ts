// 0001: tenants, sessions, messages, compactions, events, tenant markers (DESIGN.md §4, SPEC §13.1, §14.2).
// Never edit a migration that has landed; add a new one.
import { type Kysely, sql } from 'kysely';

const TENANT_TABLES = ['tenant_markers', 'sessions', 'messages', 'compactions', 'events'] as const;

/**
 * Tenant-scoped work runs as this NOLOGIN role (`SET LOCAL ROLE` in infra/db/tenant.ts), so row-level security
 * applies to it. The owner (who runs migrations and tenant administration) is not subject to RLS, which lets the
 * search view below, owned by the owner, use the trigram and tsvector indexes: under RLS PostgreSQL cannot use an
 * index for non-leakproof operators such as ILIKE and @@.
 */
export const TENANT_ROLE = 'dc_tenant';

export async function up(db: Kysely<unknown>): Promise<void> {
  // pg_trgm is a trusted extension: the database owner may create it.
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
  // The role is cluster-wide: infra/postgres/ensure.sh creates it; otherwise the owner needs CREATEROLE here.
  await sql`
    DO $$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dc_tenant') THEN CREATE ROLE dc_tenant NOLOGIN; END IF;
    EXCEPTION WHEN duplicate_object THEN NULL;
    END $$`.execute(db);
  await sql`
    DO $$ BEGIN
      IF NOT pg_has_role(current_user, 'dc_tenant', 'MEMBER') THEN EXECUTE format('GRANT dc_tenant TO %I', current_user); END IF;
    END $$`.execute(db);

  await sql`
    CREATE TABLE tenants (
      id text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
      name text NOT NULL,
      policy jsonb NOT NULL DEFAULT '{}'::jsonb,
      policy_version integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);

  await sql`
    CREATE TABLE tenant_markers (
      tenant_id text NOT NULL REFERENCES tenants (id),
      key text NOT NULL,
      value text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, key)
    )`.execute(db);

  await sql`
    CREATE TABLE sessions (
      tenant_id text NOT NULL REFERENCES tenants (id),
      id text NOT NULL,
      conversation_id text NOT NULL,
      source text NOT NULL DEFAULT 'api',
      model text,
      provider text,
      title text,
      started_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz,
      end_reason text,
      parent_session_id text,
      compression_count integer NOT NULL DEFAULT 0,
      responses_native_disabled boolean NOT NULL DEFAULT false,
      compressor_state jsonb,
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, parent_session_id) REFERENCES sessions (tenant_id, id)
    )`.execute(db);
  await sql`CREATE INDEX sessions_conversation ON sessions (tenant_id, conversation_id, started_at DESC)`.execute(db);
  await sql`CREATE INDEX sessions_parent ON sessions (tenant_id, parent_session_id)`.execute(db);
  await sql`CREATE INDEX sessions_title ON sessions (tenant_id, title)`.execute(db);

  // Text used for search (SPEC §14.2): content text (text parts joined with ' '), tool name, tool calls.
  await sql`
    CREATE FUNCTION dc_indexed_text(content text, content_parts jsonb, tool_name text, tool_calls jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT
        CASE WHEN content_parts IS NULL THEN coalesce(content, '')
             ELSE coalesce((SELECT string_agg(p ->> 'text', ' ' ORDER BY ord)
                              FROM jsonb_array_elements(content_parts) WITH ORDINALITY AS e(p, ord)
                             WHERE p ->> 'type' = 'text'), '')
        END
        || ' ' || coalesce(tool_name, '') || ' ' ||
        coalesce((SELECT string_agg(coalesce(c -> 'function' ->> 'name', '') || ' ' ||
                                    coalesce(c -> 'function' ->> 'arguments', ''), ' ' ORDER BY ord)
                    FROM jsonb_array_elements(
                           CASE WHEN jsonb_typeof(tool_calls) = 'array' THEN tool_calls ELSE '[]'::jsonb END
                         ) WITH ORDINALITY AS e(c, ord)), '')
    $$`.execute(db);

  await sql`
    CREATE TABLE messages (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      tenant_id text NOT NULL,
      session_id text NOT NULL,
      role text NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
      content text,
      content_parts jsonb,
      tool_calls jsonb,
      tool_call_id text,
      tool_name text,
      extra jsonb,
      "timestamp" timestamptz NOT NULL DEFAULT now(),
      active boolean NOT NULL DEFAULT true,
      compacted boolean NOT NULL DEFAULT false,
      position integer NOT NULL,
      summary_body text,
      compaction_id text,
      idempotency_key text,
      token_estimate integer NOT NULL DEFAULT 0,
      indexed_text text GENERATED ALWAYS AS (dc_indexed_text(content, content_parts, tool_name, tool_calls)) STORED,
      search_tsv tsvector GENERATED ALWAYS AS
        (to_tsvector('simple'::regconfig, dc_indexed_text(content, content_parts, tool_name, tool_calls))) STORED,
      FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
    )`.execute(db);
  await sql`CREATE INDEX messages_transcript ON messages (tenant_id, session_id, active, position)`.execute(db);
  await sql`CREATE UNIQUE INDEX messages_idempotency ON messages (tenant_id, session_id, idempotency_key)
            WHERE idempotency_key IS NOT NULL`.execute(db);
  await sql`CREATE INDEX messages_recent ON messages (tenant_id, "timestamp" DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX messages_compaction ON messages (tenant_id, compaction_id) WHERE compaction_id IS NOT NULL`.execute(
    db,
  );
  await sql`CREATE INDEX messages_search_tsv ON messages USING gin (search_tsv)`.execute(db);
  await sql`CREATE INDEX messages_search_trgm ON messages USING gin (indexed_text gin_trgm_ops)`.execute(db);

  await sql`
    CREATE TABLE compactions (
      tenant_id text NOT NULL,
      id text NOT NULL,
      session_id text NOT NULL,
      conversation_id text NOT NULL,
      seq integer NOT NULL,
      "trigger" text NOT NULL
        CHECK ("trigger" IN ('preflight', 'post_response', 'manual', 'hygiene', 'codex_app_server')),
      status text NOT NULL DEFAULT 'pending',
      in_place boolean NOT NULL DEFAULT true,
      focus_topic text,
      previous_summary text,
      plan jsonb,
      prune_result jsonb,
      summary text,
      summary_body text,
      fallback_used boolean NOT NULL DEFAULT false,
      failure_class text,
      stats jsonb,
      replayable boolean NOT NULL DEFAULT false,
      compacted_row_ids bigint[] NOT NULL DEFAULT '{}',
      new_session_id text,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz,
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
    )`.execute(db);
  await sql`CREATE INDEX compactions_status ON compactions (tenant_id, status, created_at DESC)`.execute(db);
  await sql`CREATE INDEX compactions_session ON compactions (tenant_id, session_id, seq)`.execute(db);

  await sql`
    CREATE TABLE events (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id),
      session_id text,
      type text NOT NULL,
      payload jsonb NOT NULL,
      compaction_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX events_once_per_compaction ON events (tenant_id, type, compaction_id)
            WHERE compaction_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX events_session ON events (tenant_id, session_id, created_at)`.execute(db);

  // Row-level security keyed on the per-transaction setting app.tenant_id (set with set_config(..., true)); an unset
  // setting matches no row. The tenant role may read, insert and update, but never delete: nothing is ever deleted.
  await sql`GRANT USAGE ON SCHEMA public TO dc_tenant`.execute(db);
  await sql`GRANT SELECT ON tenants TO dc_tenant`.execute(db);
  for (const table of TENANT_TABLES) {
    await sql`ALTER TABLE ${sql.table(table)} ENABLE ROW LEVEL SECURITY`.execute(db);
    await sql`
      CREATE POLICY tenant_isolation ON ${sql.table(table)}
        USING (tenant_id = current_setting('app.tenant_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true))`.execute(db);
    await sql`GRANT SELECT, INSERT, UPDATE ON ${sql.table(table)} TO dc_tenant`.execute(db);
  }

  // Search reads through this view: it applies the same tenant predicate itself and, being owned by the table
  // owner, lets the planner use the GIN indexes (SPEC §14.1: tenant restriction first, always).
  await sql`
    CREATE VIEW tenant_messages AS
      SELECT * FROM messages WHERE tenant_id = current_setting('app.tenant_id', true)`.execute(db);
  await sql`GRANT SELECT ON tenant_messages TO dc_tenant`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW IF EXISTS tenant_messages`.execute(db);
  for (const table of ['events', 'compactions', 'messages', 'sessions', 'tenant_markers', 'tenants']) {
    await sql`DROP TABLE IF EXISTS ${sql.table(table)} CASCADE`.execute(db);
  }
  await sql`DROP FUNCTION IF EXISTS dc_indexed_text(text, jsonb, text, jsonb)`.execute(db);
}
