// 0021: events reach the people who need them (issue #14 §2, SPEC §13.5). Never edit a migration that has landed.
//
// - `events.conversation_id`: every event names its conversation (filled from its session when the writer gave none,
//   old rows backfilled), so a feed can be filtered by conversation; `events_feed` serves "the tenant's events after
//   id N" (Server-Sent Events resumed with Last-Event-ID, webhook dispatch), `events_feed_conversation` one
//   conversation's.
// - A tenant's event ids follow commit order: an insert takes the tenant's transaction-level advisory lock and only
//   then draws its id, so no event becomes visible after a later one of the same tenant (a reader that resumes after
//   id N never skips an event that committed late).
// - `events.dedupe_key`: an event a retried writer may write twice (a workflow notice) is written once.
// - Compaction lifecycle events written by the database itself, in the transaction that changes the record, whoever
//   writes it: `compaction:started` when a record is created running, `compaction:completed` when it becomes
//   committed or fallback, `compaction:failed` when it ends otherwise (failed, aborted, rejected, noop); each once per
//   compaction (events_once_per_compaction). Payload: ids, trigger, status, tokens before/after, fallback, error.
// - `webhooks` (a tenant's endpoints, with their secret and the id of the last event dispatched) and
//   `webhook_deliveries` (one row per endpoint and event: status, attempts, last answer) under row-level security.
//   An endpoint is deleted by marking it (`deleted_at`): the tenant role never deletes.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE events ADD COLUMN conversation_id text, ADD COLUMN dedupe_key text`.execute(db);
  await sql`
    UPDATE events e SET conversation_id = s.conversation_id
      FROM sessions s WHERE s.tenant_id = e.tenant_id AND s.id = e.session_id`.execute(db);
  await sql`CREATE INDEX events_feed ON events (tenant_id, id)`.execute(db);
  await sql`CREATE INDEX events_feed_conversation ON events (tenant_id, conversation_id, id)`.execute(db);
  await sql`CREATE UNIQUE INDEX events_dedupe ON events (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL`.execute(
    db,
  );
  await sql`
    CREATE FUNCTION dc_event_conversation() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
      -- Commit order per tenant: the lock is held until the writing transaction ends, the id is drawn under it.
      PERFORM pg_advisory_xact_lock(hashtext('dc_events:' || NEW.tenant_id));
      NEW.id := nextval(pg_get_serial_sequence('public.events', 'id'));
      IF NEW.conversation_id IS NULL AND NEW.session_id IS NOT NULL THEN
        SELECT s.conversation_id INTO NEW.conversation_id
          FROM sessions s WHERE s.tenant_id = NEW.tenant_id AND s.id = NEW.session_id;
      END IF;
      RETURN NEW;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER event_conversation BEFORE INSERT ON events
      FOR EACH ROW EXECUTE FUNCTION dc_event_conversation()`.execute(db);

  await sql`
    CREATE FUNCTION dc_compaction_event() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      kind text;
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
        RETURN NULL;
      END IF;
      kind := CASE
        WHEN NEW.status IN ('pending', 'running') THEN 'compaction:started'
        WHEN NEW.status IN ('committed', 'fallback') THEN 'compaction:completed'
        ELSE 'compaction:failed'
      END;
      INSERT INTO events (tenant_id, session_id, conversation_id, type, payload, compaction_id)
      VALUES (NEW.tenant_id, coalesce(NEW.new_session_id, NEW.session_id), NEW.conversation_id, kind,
              jsonb_build_object(
                'compaction_id', NEW.id,
                'conversation_id', NEW.conversation_id,
                'session_id', coalesce(NEW.new_session_id, NEW.session_id),
                'trigger', NEW.trigger,
                'status', NEW.status,
                'in_place', NEW.in_place,
                'tokens_before', (NEW.stats ->> 'tokensBefore')::bigint,
                'tokens_after', (NEW.stats ->> 'tokensAfter')::bigint,
                'fallback_used', NEW.fallback_used,
                'error', CASE WHEN kind = 'compaction:failed' THEN NEW.error END),
              NEW.id)
      ON CONFLICT (tenant_id, type, compaction_id) WHERE compaction_id IS NOT NULL DO NOTHING;
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER compaction_event AFTER INSERT OR UPDATE OF status ON compactions
      FOR EACH ROW EXECUTE FUNCTION dc_compaction_event()`.execute(db);

  await sql`
    CREATE TABLE webhooks (
      tenant_id text NOT NULL REFERENCES tenants (id),
      id text NOT NULL,
      url text NOT NULL,
      secret text NOT NULL,
      description text,
      created_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz,
      -- Events up to this id were handed to delivery (issue #14 §2).
      dispatched_through bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (tenant_id, id)
    )`.execute(db);
  await sql`
    CREATE TABLE webhook_deliveries (
      tenant_id text NOT NULL,
      webhook_id text NOT NULL,
      event_id bigint NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      PRIMARY KEY (tenant_id, webhook_id, event_id),
      FOREIGN KEY (tenant_id, webhook_id) REFERENCES webhooks (tenant_id, id)
    )`.execute(db);
  for (const table of ['webhooks', 'webhook_deliveries']) {
    await sql`ALTER TABLE ${sql.table(table)} ENABLE ROW LEVEL SECURITY`.execute(db);
    await sql`
      CREATE POLICY tenant_isolation ON ${sql.table(table)}
        USING (tenant_id = current_setting('app.tenant_id', true))
        WITH CHECK (tenant_id = current_setting('app.tenant_id', true))`.execute(db);
    await sql`GRANT SELECT, INSERT, UPDATE ON ${sql.table(table)} TO dc_tenant`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS webhook_deliveries`.execute(db);
  await sql`DROP TABLE IF EXISTS webhooks`.execute(db);
  await sql`DROP TRIGGER IF EXISTS compaction_event ON compactions`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_compaction_event()`.execute(db);
  await sql`DROP TRIGGER IF EXISTS event_conversation ON events`.execute(db);
  await sql`DROP FUNCTION IF EXISTS dc_event_conversation()`.execute(db);
  await sql`DROP INDEX IF EXISTS events_dedupe`.execute(db);
  await sql`DROP INDEX IF EXISTS events_feed_conversation`.execute(db);
  await sql`DROP INDEX IF EXISTS events_feed`.execute(db);
  await sql`ALTER TABLE events DROP COLUMN IF EXISTS conversation_id, DROP COLUMN IF EXISTS dedupe_key`.execute(db);
}
