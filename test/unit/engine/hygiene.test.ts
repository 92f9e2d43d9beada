import { describe, expect, it } from 'vitest';
import {
  gatewayHygieneDecision,
  hygieneOutcome,
  hygieneTriggerThreshold,
  hygieneWarningThreshold,
  shouldRunGatewayHygiene,
} from '../../../engine/hygiene.js';
import { estimateMessagesTokensRough } from '../../../engine/tokens.js';
import type { ChatMessage } from '../../../engine/types.js';

const FAILED = '⚠️ Context compression before your message failed. No messages were dropped.';
const WARNING =
  "⚠️ This conversation is close to the model's context limit even after compaction. Consider /new to start a fresh session or /compress to compact it now.";

function transcript(count: number, chars: number): ChatMessage[] {
  return Array.from({ length: count }, (_, i) => ({
    role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
    content: 'x'.repeat(chars),
  }));
}

/** About 120,000 estimated tokens in 10 messages. */
const ABOUT_120K = transcript(10, 48000);

describe('hygiene thresholds — SPEC §11.2', () => {
  it.each([
    [64000, 54400, 60800],
    [128000, 108800, 121600],
    [200000, 170000, 190000],
    [272000, 231200, 258400],
    [1000000, 850000, 950000],
  ])('ctx %s → trigger %s, warning %s', (ctx, trigger, warning) => {
    expect(hygieneTriggerThreshold(ctx)).toBe(trigger);
    expect(hygieneWarningThreshold(ctx)).toBe(warning);
    expect(shouldRunGatewayHygiene({ history: [], contextLength: ctx }).threshold).toBe(trigger);
  });
});

describe('shouldRunGatewayHygiene — SPEC §11.2 examples', () => {
  it('a transcript of about 120,000 tokens runs on 128,000 but not on 200,000 or 1,000,000', () => {
    const tokens = estimateMessagesTokensRough(ABOUT_120K);
    expect(tokens).toBeGreaterThan(119000);
    expect(tokens).toBeLessThan(121000);
    expect(shouldRunGatewayHygiene({ history: ABOUT_120K, contextLength: 128000 })).toEqual({
      run: true,
      tokens,
      threshold: 108800,
      source: 'estimated',
    });
    expect(shouldRunGatewayHygiene({ history: ABOUT_120K, contextLength: 200000 }).run).toBe(false);
    expect(shouldRunGatewayHygiene({ history: ABOUT_120K, contextLength: 1000000 }).run).toBe(false);
  });

  it('lastPromptTokens 180,000 on 200,000 runs even if the estimate is about 5,000', () => {
    const small = transcript(10, 2000);
    expect(estimateMessagesTokensRough(small)).toBeLessThan(6000);
    expect(shouldRunGatewayHygiene({ history: small, contextLength: 200000, lastPromptTokens: 180000 })).toEqual({
      run: true,
      tokens: 180000,
      threshold: 170000,
      source: 'actual',
    });
  });

  it('a real reading is preferred over the estimate, also downwards', () => {
    const decision = shouldRunGatewayHygiene({ history: ABOUT_120K, contextLength: 128000, lastPromptTokens: 50000 });
    expect(decision).toEqual({ run: false, tokens: 50000, threshold: 108800, source: 'actual' });
  });

  it('250 short messages on 200,000 do not run', () => {
    const decision = shouldRunGatewayHygiene({ history: transcript(250, 20), contextLength: 200000 });
    expect(decision.run).toBe(false);
    expect(decision.source).toBe('estimated');
    expect(decision.tokens).toBe(estimateMessagesTokensRough(transcript(250, 20)));
  });

  it('5,000 tiny messages run because of the hard limit; 4,999 do not', () => {
    expect(shouldRunGatewayHygiene({ history: transcript(5000, 1), contextLength: 1000000 }).run).toBe(true);
    expect(shouldRunGatewayHygiene({ history: transcript(4999, 1), contextLength: 1000000 }).run).toBe(false);
  });

  it('honours a custom hard message limit', () => {
    expect(
      shouldRunGatewayHygiene({ history: transcript(40, 1), contextLength: 1000000, hardMessageLimit: 40 }).run,
    ).toBe(true);
  });

  it('3 huge messages never run; 4 do', () => {
    const huge = transcript(3, 400000);
    expect(shouldRunGatewayHygiene({ history: huge, contextLength: 64000 }).run).toBe(false);
    expect(shouldRunGatewayHygiene({ history: huge, contextLength: 64000, lastPromptTokens: 63000 }).run).toBe(false);
    expect(shouldRunGatewayHygiene({ history: huge, contextLength: 64000, hardMessageLimit: 3 }).run).toBe(false);
    expect(shouldRunGatewayHygiene({ history: transcript(4, 400000), contextLength: 64000 }).run).toBe(true);
  });

  it('does not run when disabled, but still reports tokens, threshold and source', () => {
    expect(shouldRunGatewayHygiene({ history: ABOUT_120K, contextLength: 128000, enabled: false })).toEqual({
      run: false,
      tokens: estimateMessagesTokensRough(ABOUT_120K),
      threshold: 108800,
      source: 'estimated',
    });
  });

  it('runs at exactly the threshold', () => {
    expect(
      shouldRunGatewayHygiene({ history: transcript(4, 1), contextLength: 200000, lastPromptTokens: 170000 }).run,
    ).toBe(true);
    expect(
      shouldRunGatewayHygiene({ history: transcript(4, 1), contextLength: 200000, lastPromptTokens: 169999 }).run,
    ).toBe(false);
  });
});

describe('hygieneOutcome — SPEC §11.3 steps 3, 5, 6', () => {
  const history = transcript(10, 4000);
  const historyTokens = estimateMessagesTokensRough(history);
  const smaller = transcript(4, 1000);
  const ctx = 200000;

  it('adopts a smaller compaction, with no cooldown and no notice', () => {
    const out = hygieneOutcome({
      history,
      tokens: 180000,
      contextLength: ctx,
      result: { kind: 'compacted', messages: smaller },
    });
    expect(out).toEqual({
      adopt: true,
      resolution: 'adopted',
      messages: smaller,
      cooldownSeconds: 0,
      restorePreviousSummary: false,
      afterTokens: estimateMessagesTokensRough(smaller),
      notices: [],
    });
  });

  it('rejects a compaction that is not smaller (equal or larger)', () => {
    for (const messages of [history.slice(), transcript(12, 4000)]) {
      const out = hygieneOutcome({
        history,
        tokens: historyTokens,
        contextLength: ctx,
        result: { kind: 'compacted', messages },
      });
      expect(out.adopt).toBe(false);
      expect(out.resolution).toBe('rejected_larger');
      expect(out.messages).toBe(history);
      expect(out.cooldownSeconds).toBe(300);
      expect(out.restorePreviousSummary).toBe(true);
      expect(out.notices).toEqual([FAILED]);
    }
  });

  it('a no-op keeps the transcript and sets the cooldown without the failure notice', () => {
    const out = hygieneOutcome({ history, tokens: 180000, contextLength: ctx, result: { kind: 'noop' } });
    expect(out).toMatchObject({
      adopt: false,
      resolution: 'noop',
      cooldownSeconds: 300,
      restorePreviousSummary: false,
    });
    expect(out.messages).toBe(history);
    expect(out.notices).toEqual([]);
  });

  it.each([
    ['aborted', false],
    ['failed', false],
    ['commit_failed', true],
  ] as const)('%s shows the failure notice (restore previous summary: %s)', (kind, restore) => {
    const out = hygieneOutcome({ history, tokens: 180000, contextLength: ctx, result: { kind } });
    expect(out).toMatchObject({
      adopt: false,
      resolution: kind,
      cooldownSeconds: 300,
      restorePreviousSummary: restore,
    });
    expect(out.messages).toBe(history);
    expect(out.notices).toEqual([FAILED]);
  });

  it('warns when tokens stay ≥ 95 % of ctx without adoption (after = tokens)', () => {
    expect(hygieneOutcome({ history, tokens: 190000, contextLength: ctx, result: { kind: 'noop' } }).notices).toEqual([
      WARNING,
    ]);
    expect(hygieneOutcome({ history, tokens: 189999, contextLength: ctx, result: { kind: 'noop' } }).notices).toEqual(
      [],
    );
    expect(
      hygieneOutcome({ history, tokens: 195000, contextLength: ctx, result: { kind: 'aborted' } }).notices,
    ).toEqual([FAILED, WARNING]);
  });

  it('measures an adopted result by its estimate (after = estimate of the result)', () => {
    const big = transcript(10, 80000);
    const lessBig = transcript(10, 78000);
    const after = estimateMessagesTokensRough(lessBig);
    expect(after).toBeGreaterThanOrEqual(190000);
    const out = hygieneOutcome({
      history: big,
      tokens: 10,
      contextLength: ctx,
      result: { kind: 'compacted', messages: lessBig },
    });
    expect(out.adopt).toBe(true);
    expect(out.afterTokens).toBe(after);
    expect(out.notices).toEqual([WARNING]);
  });
});

describe('gatewayHygieneDecision (running totals)', () => {
  it('decides exactly like shouldRunGatewayHygiene over the same history', () => {
    const history: ChatMessage[] = Array.from({ length: 6 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: 'x'.repeat(40_000 + i),
    }));
    for (const contextLength of [64_000, 128_000, 200_000]) {
      for (const lastPromptTokens of [0, 50_000, 180_000]) {
        const fromHistory = shouldRunGatewayHygiene({ history, contextLength, lastPromptTokens });
        const fromTotals = gatewayHygieneDecision({
          historyLength: history.length,
          historyTokens: estimateMessagesTokensRough(history),
          contextLength,
          lastPromptTokens,
        });
        expect(fromTotals).toEqual(fromHistory);
      }
    }
  });

  it('runs at ≥ 85 % with 4 messages, not with 3, not when disabled', () => {
    const base = { historyTokens: 170_000, contextLength: 200_000 };
    expect(gatewayHygieneDecision({ ...base, historyLength: 4 }).run).toBe(true);
    expect(gatewayHygieneDecision({ ...base, historyLength: 3 }).run).toBe(false);
    expect(gatewayHygieneDecision({ ...base, historyLength: 4, enabled: false }).run).toBe(false);
    expect(gatewayHygieneDecision({ ...base, historyTokens: 169_999, historyLength: 4 }).run).toBe(false);
  });
});
