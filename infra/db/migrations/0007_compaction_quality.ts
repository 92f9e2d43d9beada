// 0007: compaction quality (issue #15). Never edit a migration that has landed.
//
// - `compactions.summary_backend`: who wrote the committed summary — `llm` (the configured summariser), `extractive`
//   (the deterministic extractive summariser, SPEC §19 `summary_backend`) or `fallback` (SPEC §9.5).
// - `compactions.retention_before` / `retention_after`: the quality gate of an LLM summary — the share of the window's
//   pinned identifiers and user constraints present in the model's summary before the gate, and in the committed
//   summary after it (re-prompt once, then append deterministically). Null when no gate ran.
// - `messages.pinned`: an operator pinned the message; with `compression.rehydrate_pinned` a compaction re-injects
//   pinned window messages after the summary. Row state, kept apart from the indexed text (DESIGN.md §4).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE compactions
      ADD COLUMN summary_backend text,
      ADD COLUMN retention_before double precision,
      ADD COLUMN retention_after double precision`.execute(db);
  await sql`ALTER TABLE messages ADD COLUMN pinned boolean NOT NULL DEFAULT false`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE messages DROP COLUMN IF EXISTS pinned`.execute(db);
  await sql`
    ALTER TABLE compactions
      DROP COLUMN IF EXISTS retention_after,
      DROP COLUMN IF EXISTS retention_before,
      DROP COLUMN IF EXISTS summary_backend`.execute(db);
}
