// Cache economics of chat turns (issue: LLM providers §4): totals per conversation and, after a compaction, the
// tokens the first request re-wrote to cache and the turns until cache reads recovered. Pure.
import type { CacheTelemetry, TurnUsage } from '../../contracts/conversation.js';

/** A turn whose cache reads cover at least this share of its prompt counts as "cache recovered" after a compaction. */
export const CACHE_RECOVERED_SHARE = 0.5;

/**
 * Adds one turn's usage to the telemetry. After a compaction, the first request's cache writes are the tokens
 * re-written to cache; the first turn whose reads reach CACHE_RECOVERED_SHARE of its prompt ends the measurement,
 * which is returned (to be recorded on the compaction) — null while still measuring or when nothing is watched.
 */
export function accountCacheUsage(
  cache: CacheTelemetry,
  usage: TurnUsage,
  options: { watched?: boolean } = {},
): { compactionId: string; rewriteTokens: number; recoveryTurns: number } | null {
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
  if (usage.prompt_tokens <= 0 || usage.cache_read_tokens < CACHE_RECOVERED_SHARE * usage.prompt_tokens) return null;
  cache.lastRecovery = {
    compactionId: watching.compactionId,
    rewriteTokens: watching.rewriteTokens,
    recoveryTurns: watching.turnsSince,
  };
  cache.watching = null;
  return cache.lastRecovery;
}
