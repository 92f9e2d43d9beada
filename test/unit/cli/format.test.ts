// `dctx` text rendering of compactions (workers/cli/format.ts): the outcome of `dctx compact`, and the ENGINE column
// and the reason of `dctx compactions list` (SPEC §10.3: the built-in compressor standing in says why).
import { describe, expect, it } from 'vitest';
import type { CompactionReport, CompactionSummary } from '../../../clients/httpClient.js';
import { formatCompactionReport, formatCompactions } from '../../../workers/cli/format.js';

const stats = {
  tokensBefore: 40_723,
  tokensAfter: 14_166,
  prunedCount: 0,
  droppedCount: 116,
  fallbackUsed: false,
  aborted: false,
  noop: false as const,
  summary: null,
};

describe('formatCompactionReport', () => {
  it('a committed compaction: tokens, what was summarised, the session', () => {
    const report: CompactionReport = {
      compactionId: 'c-1',
      trigger: 'manual',
      status: 'committed',
      notice: null,
      noopReason: null,
      sessionId: 's-1',
      stats,
      retention: null,
      error: null,
    };
    expect(formatCompactionReport(report)).toBe(
      [
        'Compaction c-1 (manual): committed',
        'tokens       40,723 → 14,166 (estimated)',
        'replaced     116 messages (archived, still searchable)',
        'session      s-1',
      ].join('\n'),
    );
  });

  it('a no-op: its reason and the notice, no token line', () => {
    const text = formatCompactionReport({
      compactionId: 'c-2',
      trigger: 'manual',
      status: 'noop',
      notice: 'Nothing to compress: the conversation is too short.',
      noopReason: 'insufficient_messages',
      sessionId: 's-1',
      stats: { ...stats, tokensAfter: stats.tokensBefore, droppedCount: 0, noop: 'insufficient_messages' as never },
      retention: null,
      error: null,
    });
    expect(text).toBe(
      [
        'Compaction c-2 (manual): noop (insufficient_messages)',
        'session      s-1',
        'notice       Nothing to compress: the conversation is too short.',
      ].join('\n'),
    );
  });
});

describe('formatCompactions', () => {
  const row = (over: Partial<CompactionSummary>): CompactionSummary =>
    ({
      id: 'c-1',
      conversationId: 'conv',
      seq: 1,
      trigger: 'post_response',
      status: 'committed',
      replayable: false,
      error: null,
      engine: 'compressor',
      engineFallback: null,
      stats,
      createdAt: '2026-12-06T13:00:00.000Z',
      ...over,
    }) as CompactionSummary;

  it('shows the engine, and why the built-in one stood in for the configured engine', () => {
    const lines = formatCompactions([
      row({ id: 'c-2', seq: 2, engine: 'archive-only' }),
      row({ engineFallback: "Context engine 'missing' not found; using the built-in compressor." }),
    ]).split('\n');
    expect(lines[0]).toMatch(/^ID\s+CONVERSATION\s+#\s+TRIGGER\s+STATUS\s+ENGINE\s+TOKENS\s+CREATED\s+ERROR$/);
    expect(lines[1]).toMatch(/^c-2\s+conv\s+2\s+post_response\s+committed\s+archive-only\s+40,723 → 14,166/);
    expect(lines[2]).toMatch(/compressor\s+40,723 → 14,166\s+\S+\s+Context engine 'missing' not found;/);
  });
});
