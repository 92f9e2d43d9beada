// The four compaction phases as Temporal activities (DESIGN.md §3, SPEC §8.1): align → prune → summarize →
// reassemble, one file each, plus the record's begin and end, the replay of a fallback compaction, and a plugin
// engine's compaction (SPEC §10.3). Each activity is thin (load by compaction id → pure engine step → persist) and
// idempotent: a retry finds its stored result.
import { createAlignActivities } from './align.js';
import { createEngineCompressActivities } from './engineCompress.js';
import { createPruneActivities } from './prune.js';
import { createReassembleActivities } from './reassemble.js';
import type { CompactionActivityDeps } from './record.js';
import { createSummarizeActivities } from './summarize.js';
import { WindowCache } from './windowCache.js';

export { findSummaryIndex } from './reassemble.js';
export type { AnthropicCompactorFor, CompactionActivityDeps, SummarizerFor } from './record.js';
export { createReplayActivities, type ReplayActivities } from './replay.js';
export { WindowCache } from './windowCache.js';

/** One window cache per worker's activities unless the caller brings its own. */
export function createCompactionActivities(given: CompactionActivityDeps) {
  const deps = given.windowCache ? given : { ...given, windowCache: new WindowCache() };
  return {
    ...createAlignActivities(deps),
    ...createPruneActivities(deps),
    ...createSummarizeActivities(deps),
    ...createReassembleActivities(deps),
    ...createEngineCompressActivities(deps),
  };
}

export type CompactionActivities = ReturnType<typeof createCompactionActivities>;
