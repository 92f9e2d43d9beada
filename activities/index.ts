// All activities of the worker, built from injected dependencies (one pg pool per process, the summarizer).
import type { Kysely } from 'kysely';
import type { CompressionConfig, Summarizer } from '../engine/index.js';
import type { Database } from '../infra/db/schema.js';
import { createCompactionActivities } from './compaction.js';
import { createConversationActivities } from './conversation.js';
import { createReplayActivities } from './replay.js';

export interface ActivityDeps {
  db: Kysely<Database>;
  baseConfig: CompressionConfig;
  summarizer: Summarizer | null;
  heartbeatIntervalMs?: number;
}

export function createActivities(deps: ActivityDeps) {
  return {
    ...createConversationActivities(deps),
    ...createCompactionActivities(deps),
    ...createReplayActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
