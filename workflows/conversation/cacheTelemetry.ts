// Cache economics of chat turns (issue: LLM providers §4): totals per conversation and, after a compaction, the
// tokens the first request re-wrote to cache and the turns until cache reads recovered. Pure.
import type { CacheRecovery, CacheTelemetry, TurnUsage } from '../../contracts/conversation.js';
import { cacheRecovered, type QuietFold, type QuietTurns } from '../../engine/index.js';

/**
 * Adds one turn's usage to the telemetry. After a compaction, the first request's cache writes are the tokens
 * re-written to cache; the first turn whose reads reach CACHE_RECOVERED_SHARE of its prompt ends the measurement,
 * which is returned (to be recorded on the compaction) — null while still measuring or when nothing is watched.
 */
export function accountCacheUsage(
  cache: CacheTelemetry,
  usage: TurnUsage,
  options: { watched?: boolean } = {},
): CacheRecovery | null {
  cache.turns += 1;
  cache.cacheReadTokens += usage.cache_read_tokens;
  cache.cacheWriteTokens += usage.cache_write_tokens;
  cache.uncachedInputTokens += usage.uncached_input_tokens;
  cache.lastTurn = usage;
  // A turn whose context was read before the watched compaction committed does not measure it (`watched: false`).
  const watching = options.watched === false ? null : cache.watching;
  if (!watching) return null;
  watching.turnsSince += 1;
  if (watching.rewriteTokens === null) watching.rewriteTokens = usage.cache_write_tokens;
  return cacheRecovered(usage) ? endWatch(cache, watching) : null;
}

function endWatch(cache: CacheTelemetry, watching: NonNullable<CacheTelemetry['watching']>): CacheRecovery {
  cache.lastRecovery = {
    compactionId: watching.compactionId,
    rewriteTokens: watching.rewriteTokens ?? 0,
    recoveryTurns: watching.turnsSince,
  };
  cache.watching = null;
  return cache.lastRecovery;
}

/**
 * The turns of a quiet fold (engine/quietBatches.ts), counted as accountCacheUsage counts them one by one. Each was
 * read after the commit of the compaction watched when the fold is applied: a background compaction's fold is
 * applied before its outcome starts a new watch, and other commits void the rules (a reply read before one is
 * notified).
 */
export function accountFoldedTurns(cache: CacheTelemetry, turns: QuietTurns): CacheRecovery | null {
  cache.turns += turns.turns;
  cache.cacheReadTokens += turns.cacheReadTokens;
  cache.cacheWriteTokens += turns.cacheWriteTokens;
  cache.uncachedInputTokens += turns.uncachedInputTokens;
  cache.lastTurn = turns.lastTurn;
  const watching = cache.watching;
  if (!watching) return null;
  if (watching.rewriteTokens === null) watching.rewriteTokens = turns.firstCacheWrite ?? 0;
  if (turns.recoveredAt === undefined) {
    watching.turnsSince += turns.turns;
    return null;
  }
  watching.turnsSince += turns.recoveredAt;
  return endWatch(cache, watching);
}

/**
 * The measurement a quiet turn's reply completes, as the workflow will count it when it applies the fold: the
 * published telemetry (its watch), then the fold's turns with this reply's. Null when this reply completes none.
 */
export function recoveryCompletedBy(
  published: CacheTelemetry | null | undefined,
  before: QuietFold | null,
  after: QuietFold,
): CacheRecovery | null {
  const turns = after.turns;
  if (!published?.watching || !turns || turns.recoveredAt === undefined) return null;
  if (before?.turns?.recoveredAt !== undefined) return null;
  return accountFoldedTurns(structuredClone(published), turns);
}
