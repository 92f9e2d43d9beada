// 0022: which context engine produced a compaction (issue #14 §1, SPEC §10.3). Never edit a migration that has landed;
// add a new one.
//
// - `compactions.engine`: `compressor` (the built-in engine's four phases) or the name of the plugin or registered
//   engine whose `compress()` produced the committed transcript.
// - `compactions.engine_fallback`: the §10.3 line (or the host's own, for an engine that failed while compressing) when
//   another engine was configured but the built-in compressor did the work; null otherwise.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions ADD COLUMN engine text NOT NULL DEFAULT 'compressor',
                                    ADD COLUMN engine_fallback text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE compactions DROP COLUMN IF EXISTS engine,
                                    DROP COLUMN IF EXISTS engine_fallback`.execute(db);
}
