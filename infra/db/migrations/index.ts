// Ordered, never-edited migrations, listed statically so they also work from a bundle (no directory scan).
import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001_initial.js';
import * as m0002 from './0002_search.js';
import * as m0003 from './0003_api_keys.js';
import * as m0004 from './0004_turns.js';
import * as m0005 from './0005_leakproof_search.js';
import * as m0006 from './0006_conversation_log.js';
import * as m0007 from './0007_compaction_quality.js';
import * as m0008 from './0008_message_state.js';
import * as m0009 from './0009_quiet_batches.js';
import * as m0010 from './0010_search_plan_reuse.js';
import * as m0011 from './0011_notified_since.js';
import * as m0012 from './0012_inline_indexed_text.js';
import * as m0013 from './0013_client_compaction.js';
import * as m0014 from './0014_last_key.js';
import * as m0015 from './0015_turn_replay.js';
import * as m0016 from './0016_native_trigger.js';
import * as m0017 from './0017_app_server.js';
import * as m0018 from './0018_anthropic_native.js';
import * as m0019 from './0019_key_scopes.js';
import * as m0020 from './0020_erasure.js';
import * as m0021 from './0021_event_feed.js';
import * as m0022 from './0022_context_engine.js';
import * as m0023 from './0023_search_cheap_plans.js';
import * as m0024 from './0024_generated_plpgsql.js';
import * as m0025 from './0025_key_notifications.js';
import * as m0026 from './0026_client_compactions.js';
import * as m0027 from './0027_short_pending_lists.js';
import * as m0028 from './0028_oversized_tsvector.js';

const MIGRATIONS: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_search': m0002,
  '0003_api_keys': m0003,
  '0004_turns': m0004,
  '0005_leakproof_search': m0005,
  '0006_conversation_log': m0006,
  '0007_compaction_quality': m0007,
  '0008_message_state': m0008,
  '0009_quiet_batches': m0009,
  '0010_search_plan_reuse': m0010,
  '0011_notified_since': m0011,
  '0012_inline_indexed_text': m0012,
  '0013_client_compaction': m0013,
  '0014_last_key': m0014,
  '0015_turn_replay': m0015,
  '0016_native_trigger': m0016,
  '0017_app_server': m0017,
  '0018_anthropic_native': m0018,
  '0019_key_scopes': m0019,
  '0020_erasure': m0020,
  '0021_event_feed': m0021,
  '0022_context_engine': m0022,
  '0023_search_cheap_plans': m0023,
  '0024_generated_plpgsql': m0024,
  '0025_key_notifications': m0025,
  '0026_client_compactions': m0026,
  '0027_short_pending_lists': m0027,
  '0028_oversized_tsvector': m0028,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};
