import { describe, expect, it } from 'vitest';
import type { CacheTelemetry, TurnUsage } from '../../../contracts/conversation.js';
import { accountCacheUsage } from '../../../workflows/conversation/cacheTelemetry.js';
import { noticeFor } from '../../../workflows/conversation/notices.js';
import { failedOutcome } from '../../../workflows/conversation/outcome.js';
import { EMPTY_CACHE_TELEMETRY } from '../../../workflows/conversation/state.js';
import { resolveWindow } from '../../../workflows/conversation/window.js';

function usage(prompt: number, read: number, write: number): TurnUsage {
  return {
    prompt_tokens: prompt,
    completion_tokens: 10,
    total_tokens: prompt + 10,
    cache_read_tokens: read,
    cache_write_tokens: write,
    uncached_input_tokens: prompt - read - write,
  };
}

describe('cache accounting after a compaction', () => {
  it('records the first request’s rewrite and the turns until reads reach half of the prompt', () => {
    const cache: CacheTelemetry = {
      ...EMPTY_CACHE_TELEMETRY,
      watching: { compactionId: 'c1', turnsSince: 0, rewriteTokens: null },
    };
    expect(accountCacheUsage(cache, usage(6_000, 400, 5_000))).toBeNull();
    expect(cache.watching).toEqual({ compactionId: 'c1', turnsSince: 1, rewriteTokens: 5_000 });
    expect(accountCacheUsage(cache, usage(6_200, 2_000, 300))).toBeNull(); // 32 % read: not yet
    const recovery = accountCacheUsage(cache, usage(6_400, 3_200, 100)); // exactly 50 %
    expect(recovery).toEqual({ compactionId: 'c1', rewriteTokens: 5_000, recoveryTurns: 3 });
    expect(cache.watching).toBeNull();
    expect(cache.lastRecovery).toEqual(recovery);
    expect(cache).toMatchObject({
      turns: 3,
      cacheReadTokens: 5_600,
      cacheWriteTokens: 5_400,
      uncachedInputTokens: 7_600,
    });
  });

  it('only totals when no compaction is watched', () => {
    const cache: CacheTelemetry = { ...EMPTY_CACHE_TELEMETRY };
    expect(accountCacheUsage(cache, usage(1_000, 900, 0))).toBeNull();
    expect(cache).toMatchObject({ turns: 1, cacheReadTokens: 900, lastRecovery: null, watching: null });
  });

  it('a zero prompt never counts as recovered', () => {
    const cache: CacheTelemetry = {
      ...EMPTY_CACHE_TELEMETRY,
      watching: { compactionId: 'c2', turnsSince: 0, rewriteTokens: null },
    };
    expect(accountCacheUsage(cache, usage(0, 0, 0))).toBeNull();
    expect(cache.watching?.turnsSince).toBe(1);
  });
});

describe('notices and windows', () => {
  it('maps outcomes to the SPEC §16.5 texts', () => {
    expect(noticeFor({ status: 'noop', noopReason: 'insufficient_messages' })).toBe(
      'Nothing to compress: the conversation is too short.',
    );
    expect(noticeFor({ status: 'noop', noopReason: 'no_compressible_window' })).toBe(
      'Nothing to compress: no earlier turns outside the protected head and tail.',
    );
    expect(noticeFor({ status: 'aborted', noopReason: null })).toMatch(/^⚠ Compression aborted/);
    expect(noticeFor({ status: 'fallback', noopReason: null })).toMatch(/^⚠ Summary generation failed/);
    expect(noticeFor({ status: 'committed', noopReason: null })).toBeNull();
  });

  it('a failed child leaves the transcript untouched and reports the innermost message', () => {
    const outcome = failedOutcome('c', 's', new Error('child failed', { cause: new Error('record not written') }));
    expect(outcome).toMatchObject({ status: 'failed', sessionId: 's', error: 'record not written' });
    expect(outcome).not.toHaveProperty('summaryBody');
  });

  it('resolves windows and refuses small or unknown -900k models', () => {
    expect(resolveWindow('gpt-5.5', 'openai-codex', null)).toBe(272_000);
    expect(resolveWindow('gpt-5.4-900k', null, null)).toBe(900_000);
    expect(() => resolveWindow('tiny', null, 32_000)).toThrow(/at least 64,000 are required/);
    expect(() => resolveWindow('gpt-5.5-900k', null, null)).toThrow("'gpt-5.5' has no -900k variant");
  });
});
