import { describe, expect, it } from 'vitest';
import type {
  CacheControl,
  ChatMessage,
  CompressionConfig,
  CompressionStats,
  ContentPart,
  ContextEngine,
  Role,
  Summarizer,
  SummaryRequest,
  ToolCall,
} from '../../../engine/index.js';
import * as engine from '../../../engine/index.js';

// The §17 type names must exist (compile-time check).
type PublicTypes = [
  Role,
  CacheControl,
  ToolCall,
  ContentPart,
  ChatMessage,
  SummaryRequest,
  Summarizer,
  CompressionConfig,
  CompressionStats,
  ContextEngine,
];

describe('engine/index.ts exports the public API of §17', () => {
  it.each([
    'estimateTokensRough',
    'estimateMessagesTokensRough',
    'resolveModelThreshold',
    'computeThresholdTokens',
    'computeSummaryBudget',
    'alignBoundaryForward',
    'alignBoundaryBackward',
    'sanitizeToolPairs',
    'applyAnthropicCacheControl',
    'shouldRunGatewayHygiene',
    'ContextCompressor',
    'registerContextEngine',
    'resolveContextEngine',
  ])('%s is a function', (name) => {
    expect(typeof (engine as Record<string, unknown>)[name]).toBe('function');
  });

  it('constants', () => {
    const types: PublicTypes | null = null;
    expect(types).toBeNull();
    expect(engine.PRUNED_TOOL_OUTPUT).toBe('[Old tool output cleared to save context space]');
    expect(engine.SUMMARY_PREFIX.startsWith('[CONTEXT COMPACTION]')).toBe(true);
  });

  it('the built-in engine exposes the members of §10.2', () => {
    const c = new engine.ContextCompressor({ model: 'm', contextLength: 200_000, summarize: async () => 'x' });
    const e: ContextEngine = c;
    expect(e.name).toBe('compressor');
    expect(c).toMatchObject({
      thresholdPercent: 0.75,
      thresholdTokens: 150_000,
      tailTokenBudget: 10_000,
      maxSummaryTokens: 10_000,
      compressionCount: 0,
      lastStats: null,
      previousSummary: null,
    });
  });
});
