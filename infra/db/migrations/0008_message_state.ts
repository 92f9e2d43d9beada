// 0008: row state apart from the indexed text (DESIGN.md §4, SPEC §13.1–§13.3, §13.7; issue #11 item 5). Never edit
// a migration that has landed; add a new one.
//
// A compaction commit changes the state of every row of its window: archived rows become inactive and compacted,
// carried rows are renumbered. On `messages` each such UPDATE wrote a whole new row version: the STORED generated
// search columns (indexed_text, search_tsv, cjk_grams) were recomputed and every index, the three GIN indexes
// included, got a new entry (no HOT update). The mutable state now lives in `message_state`, one narrow row per
// message (fillfactor 70 so its own updates can stay on the page), written by the append, the commits and the replay
// swap; `messages` rows are written once and keep their text, search columns and index entries for good.
//
// - `message_state`: tenant_id, message_id (→ messages.id), session_id (the transcript's key, kept equal to
//   messages.session_id: only a rotation moves rows appended during the compaction, and it updates both), active,
//   compacted, position, compaction_id. Row-level security as every tenant table; the tenant role may read, insert
//   and update, never delete. Existing rows are copied, then the columns leave `messages` (their indexes with them).
//   Indexes are kept to what a commit must maintain: the primary key, the active transcript by position (partial:
//   an archived row leaves it without a new entry) and the few hidden rows. Reads of a session's archived rows go
//   through messages' own (tenant, session, time, id) index and join the state by key.
// - The tenant role may draw ids from the messages sequence: a batch insert takes its ids first so that the state
//   rows of the same statement can name them (infra/db/messages.ts).
// - Search visibility (SPEC §14.1: active or compacted, unless includeInactive) is read from the state: a row is
//   hidden when its state row is neither active nor compacted (superseded rows, e.g. undo). `dc_search_sql` keeps
//   its GIN paths and probes the small partial index of hidden rows (an anti-join) instead of a column of the row.
//   Its definition is rewritten in place from the one 0005 created, so the rest of the function stays as it was.
import { type Kysely, sql } from 'kysely';

/** The visibility test of dc_search_sql (0005) on the alias `%1$s`, before and after this migration. */
export const VISIBLE_BY_COLUMNS = `'(%1$s.active OR %1$s.compacted)'`;
export const VISIBLE_BY_STATE =
  `'NOT EXISTS (SELECT 1 FROM public.message_state x WHERE x.tenant_id = %1$s.tenant_id ` +
  `AND x.message_id = %1$s.id AND NOT x.active AND NOT x.compacted)'`;

/** Replaces `from` by `to` in dc_search_sql's definition; fails when the definition does not hold `from` once. */
export async function rewriteSearchVisibility(db: Kysely<unknown>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    SELECT pg_get_functiondef('public.dc_search_sql(jsonb, text)'::regprocedure) AS def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== 1) throw new Error(`dc_search_sql: expected its visibility test once, found it ${found} times`);
  await sql.raw(def.replace(from, () => to)).execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE message_state (
      tenant_id text NOT NULL,
      message_id bigint NOT NULL REFERENCES messages (id),
      session_id text NOT NULL,
      active boolean NOT NULL DEFAULT true,
      compacted boolean NOT NULL DEFAULT false,
      position integer NOT NULL,
      compaction_id text,
      PRIMARY KEY (tenant_id, message_id),
      FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id)
    ) WITH (fillfactor = 70)`.execute(db);
  await sql`
    INSERT INTO message_state (tenant_id, message_id, session_id, active, compacted, position, compaction_id)
    SELECT tenant_id, id, session_id, active, compacted, position, compaction_id FROM messages`.execute(db);
  // Only active rows are indexed by position: archiving a row adds no entry here, only to the primary key.
  await sql`CREATE INDEX message_state_transcript ON message_state (tenant_id, session_id, position)
            WHERE active`.execute(db);
  await sql`CREATE INDEX message_state_hidden ON message_state (tenant_id, message_id)
            WHERE NOT active AND NOT compacted`.execute(db);
  await sql`ALTER TABLE message_state ENABLE ROW LEVEL SECURITY`.execute(db);
  await sql`
    CREATE POLICY tenant_isolation ON message_state
      USING (tenant_id = current_setting('app.tenant_id', true))
      WITH CHECK (tenant_id = current_setting('app.tenant_id', true))`.execute(db);
  await sql`GRANT SELECT, INSERT, UPDATE ON message_state TO dc_tenant`.execute(db);
  await sql`GRANT USAGE ON SEQUENCE messages_id_seq TO dc_tenant`.execute(db);

  await sql`ALTER TABLE messages DROP COLUMN active, DROP COLUMN compacted, DROP COLUMN position,
            DROP COLUMN compaction_id`.execute(db);
  await rewriteSearchVisibility(db, VISIBLE_BY_COLUMNS, VISIBLE_BY_STATE);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await rewriteSearchVisibility(db, VISIBLE_BY_STATE, VISIBLE_BY_COLUMNS);
  await sql`
    ALTER TABLE messages
      ADD COLUMN active boolean NOT NULL DEFAULT true,
      ADD COLUMN compacted boolean NOT NULL DEFAULT false,
      ADD COLUMN position integer,
      ADD COLUMN compaction_id text`.execute(db);
  await sql`
    UPDATE messages m SET active = s.active, compacted = s.compacted, position = s.position,
                          compaction_id = s.compaction_id
      FROM message_state s WHERE s.tenant_id = m.tenant_id AND s.message_id = m.id`.execute(db);
  await sql`ALTER TABLE messages ALTER COLUMN position SET NOT NULL`.execute(db);
  await sql`CREATE INDEX messages_transcript ON messages (tenant_id, session_id, active, position)`.execute(db);
  await sql`CREATE INDEX messages_compaction ON messages (tenant_id, compaction_id) WHERE compaction_id IS NOT NULL`.execute(
    db,
  );
  await sql`REVOKE USAGE ON SEQUENCE messages_id_seq FROM dc_tenant`.execute(db);
  await sql`DROP TABLE message_state`.execute(db);
}
