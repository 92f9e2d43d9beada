import { describe, expect, it } from 'vitest';
import {
  type ChatMessage,
  ContextCompressor,
  type ContextCompressorOptions,
  type Summarizer,
} from '../../../engine/index.js';
import { asst, fakeClock, sys, user } from './builders.js';

const ok: Summarizer = async () => '## Goal\nok';
const failing: Summarizer = async () => {
  throw new Error('boom');
};

function engine(options: Partial<ContextCompressorOptions> = {}) {
  const clock = fakeClock();
  const compressor = new ContextCompressor({
    model: 'test-model',
    contextLength: 200_000,
    config: { thresholdTokens: 85_000 },
    summarize: ok,
    now: clock.now,
    ...options,
  });
  return { compressor, clock };
}

function conversation(pairs = 30): ChatMessage[] {
  const rows: ChatMessage[] = [sys('S')];
  for (let i = 0; i < pairs; i++) rows.push(user(`q${i} ${'x'.repeat(300)}`), asst(`a${i} ${'y'.repeat(300)}`));
  return rows;
}

const short = [sys('S'), user('hi'), asst('hello')];
const BIG = 120_000;

describe('shouldCompress (§7.2)', () => {
  it('the spec examples with threshold 85,000', () => {
    const { compressor } = engine();
    expect(compressor.thresholdTokens).toBe(85_000);
    compressor.updateFromResponse({ prompt_tokens: 50_000 });
    expect(compressor.shouldCompress()).toBe(false);
    compressor.updateFromResponse({ prompt_tokens: 90_000 });
    expect(compressor.shouldCompress()).toBe(true);
    compressor.updateFromResponse({ prompt_tokens: 85_000 });
    expect(compressor.shouldCompress()).toBe(true);
    compressor.updateFromResponse({ prompt_tokens: 10_000 });
    expect(compressor.shouldCompress(90_000)).toBe(true);
    compressor.updateFromResponse({ prompt_tokens: 90_000 });
    expect(compressor.shouldCompress(0)).toBe(false);
    expect(compressor.shouldCompress(Number.NaN)).toBe(false);
    expect(compressor.shouldCompress(Number.POSITIVE_INFINITY)).toBe(false);
  });
});

describe('updateFromResponse (§7.3)', () => {
  it('keeps the previous values for missing, zero, negative or non-numeric readings', () => {
    const { compressor } = engine();
    compressor.updateFromResponse({ prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050 });
    for (const bad of [{}, { prompt_tokens: 0 }, { prompt_tokens: -5 }, { prompt_tokens: '7' as never }]) {
      compressor.updateFromResponse(bad);
      compressor.updateFromResponse(undefined as never);
    }
    expect(compressor.exportState()).toMatchObject({
      lastPromptTokens: 1000,
      lastCompletionTokens: 50,
      lastTotalTokens: 1050,
    });
  });

  it('verdict: a reading ≥ threshold after a compaction is a strike; a reading below resets', async () => {
    const { compressor } = engine();
    await compressor.compress(conversation());
    expect(compressor.exportState().awaitingVerdict).toBe(true);
    compressor.updateFromResponse({ prompt_tokens: 0 });
    expect(compressor.exportState().awaitingVerdict).toBe(true);
    compressor.updateFromResponse({ prompt_tokens: BIG });
    expect(compressor.exportState()).toMatchObject({ awaitingVerdict: false, ineffectiveStrikes: 1 });
    compressor.updateFromResponse({ prompt_tokens: BIG });
    expect(compressor.exportState().ineffectiveStrikes).toBe(1);
    compressor.updateFromResponse({ prompt_tokens: 1000 });
    expect(compressor.exportState().ineffectiveStrikes).toBe(0);
  });
});

describe('anti-thrashing guard (§7.4)', () => {
  it('the spec timeline: two ineffective compactions trip at t; probe at t + 300 s', async () => {
    const { compressor, clock } = engine();
    await compressor.compress(conversation());
    compressor.updateFromResponse({ prompt_tokens: BIG });
    expect(compressor.shouldCompress(BIG)).toBe(true);
    await compressor.compress(conversation());
    compressor.updateFromResponse({ prompt_tokens: BIG });
    const t = clock.now();
    expect(compressor.exportState()).toMatchObject({ ineffectiveStrikes: 2, trippedUntil: t + 300_000 });
    expect(compressor.shouldCompress(BIG)).toBe(false);
    expect(compressor.blockingReason()).toBe('ineffective');
    clock.advance(299);
    expect(compressor.shouldCompress(BIG)).toBe(false);
    clock.advance(1);
    expect(compressor.shouldCompress(BIG)).toBe(true);
    expect(compressor.exportState()).toMatchObject({ trippedUntil: null, ineffectiveStrikes: 1 });
    // one more bad compaction trips again
    await compressor.compress(conversation());
    compressor.updateFromResponse({ prompt_tokens: BIG });
    expect(compressor.exportState().trippedUntil).toBe(clock.now() + 300_000);
    expect(compressor.shouldCompress(BIG)).toBe(false);
  });

  it('a reading below the threshold untrips', async () => {
    const { compressor } = engine();
    for (let i = 0; i < 2; i++) {
      await compressor.compress(conversation());
      compressor.updateFromResponse({ prompt_tokens: BIG });
    }
    expect(compressor.exportState().trippedUntil).not.toBeNull();
    compressor.updateFromResponse({ prompt_tokens: 1000 });
    expect(compressor.exportState()).toMatchObject({ trippedUntil: null, ineffectiveStrikes: 0 });
    expect(compressor.shouldCompress(BIG)).toBe(true);
  });

  it('two consecutive fallback summaries trip at the end of compress()', async () => {
    const { compressor, clock } = engine({ summarize: failing });
    await compressor.compress(conversation());
    expect(compressor.exportState()).toMatchObject({ fallbackStreak: 1, trippedUntil: null });
    await compressor.compress(conversation(), { force: true });
    expect(compressor.exportState()).toMatchObject({ fallbackStreak: 2, trippedUntil: clock.now() + 300_000 });
    // a forced compaction does not clear the trip; an LLM success resets the streak and untrips
    const healthy = new ContextCompressor({
      model: 'm',
      contextLength: 200_000,
      summarize: ok,
      now: clock.now,
      state: compressor.exportState(),
    });
    await healthy.compress(conversation(), { force: true });
    expect(healthy.exportState()).toMatchObject({ fallbackStreak: 0, trippedUntil: null, summaryCooldownUntil: null });
  });
});

describe('cooldowns, backoff and force (§7.5, §18.10)', () => {
  it('summary failure: 600 s cooldown blocks automatic compaction (reason cooldown)', async () => {
    const { compressor, clock } = engine({ summarize: failing });
    await compressor.compress(conversation());
    expect(compressor.shouldCompress(BIG)).toBe(false);
    expect(compressor.blockingReason()).toBe('cooldown');
    clock.advance(599);
    expect(compressor.shouldCompress(BIG)).toBe(false);
    clock.advance(1);
    expect(compressor.shouldCompress(BIG)).toBe(true);
  });

  it('a no-op sets the 300 s structural backoff; it is not a strike; force clears it', async () => {
    const { compressor, clock } = engine();
    await compressor.compress(short);
    expect(compressor.exportState()).toMatchObject({
      structuralBackoffUntil: clock.now() + 300_000,
      ineffectiveStrikes: 0,
      awaitingVerdict: false,
    });
    expect(compressor.shouldCompress(BIG)).toBe(false);
    expect(compressor.blockingReason()).toBe('structural_backoff');
    clock.advance(300);
    expect(compressor.shouldCompress(BIG)).toBe(true);
    await compressor.compress(short);
    await compressor.compress(conversation(), { force: true });
    expect(compressor.exportState().structuralBackoffUntil).toBeNull();
  });

  it('compress() ignores the structural backoff; a committed compaction clears it', async () => {
    const { compressor } = engine();
    await compressor.compress(short);
    const out = await compressor.compress(conversation());
    expect(compressor.lastStats?.noop).toBe(false);
    expect(out.length).toBeLessThan(conversation().length);
    expect(compressor.exportState().structuralBackoffUntil).toBeNull();
  });

  it('force clears the summary cooldown before running', async () => {
    const { compressor } = engine({ summarize: failing });
    await compressor.compress(conversation());
    expect(compressor.summaryCooldownActive()).toBe(true);
    compressor.beginCompaction({ force: true });
    expect(compressor.summaryCooldownActive()).toBe(false);
  });
});

describe('updateModel (§4.6, §7.5)', () => {
  it('re-derives from the raw configuration: 128,000 → 1,000,000 → 200,000', () => {
    const c = new ContextCompressor({ model: 'm', contextLength: 128_000, summarize: ok });
    expect(c.thresholdTokens).toBe(96_000);
    c.updateModel('m', 1_000_000);
    expect(c.thresholdTokens).toBe(500_000);
    expect(c.tailTokenBudget).toBe(25_000);
    expect(c.maxSummaryTokens).toBe(12_000);
    c.updateModel('m', 200_000);
    expect(c.thresholdTokens).toBe(150_000);
    expect(c.thresholdPercent).toBe(0.75);
    expect(c.maxSummaryTokens).toBe(10_000);
  });

  it('an omitted provider keeps the current one', () => {
    const c = new ContextCompressor({
      model: 'gpt-5.5',
      contextLength: 272_000,
      provider: 'openai-codex',
      summarize: ok,
    });
    expect(c.thresholdTokens).toBe(231_200);
    c.updateModel('gpt-5.5', 272_000);
    expect(c.thresholdTokens).toBe(231_200);
    c.updateModel('gpt-5.5', 272_000, 'openai');
    expect(c.thresholdTokens).toBe(204_000);
  });

  it('resets the anti-thrash state, keeps count, previous summary and last reading', async () => {
    const { compressor } = engine({ summarize: failing });
    await compressor.compress(conversation());
    await compressor.compress(conversation(), { force: true });
    await compressor.compress(short);
    compressor.updateFromResponse({ prompt_tokens: 5000 });
    compressor.updateModel('other', 400_000);
    expect(compressor.exportState()).toMatchObject({
      compressionCount: 2,
      lastPromptTokens: 5000,
      ineffectiveStrikes: 0,
      fallbackStreak: 0,
      trippedUntil: null,
      summaryCooldownUntil: null,
      structuralBackoffUntil: null,
      awaitingVerdict: false,
    });
    expect(compressor.previousSummary).toMatch(/^## Goal/);
  });
});

describe('getStatus (§7.7)', () => {
  it('reports the reading, threshold, window, unrounded percent capped at 100, and count', () => {
    const { compressor } = engine();
    compressor.updateFromResponse({ prompt_tokens: 50_000 });
    expect(compressor.getStatus()).toEqual({
      last_prompt_tokens: 50_000,
      threshold_tokens: 85_000,
      context_length: 200_000,
      usage_percent: 25,
      compression_count: 0,
    });
    compressor.updateFromResponse({ prompt_tokens: 300_000 });
    expect(compressor.getStatus().usage_percent).toBe(100);
    compressor.updateFromResponse({ prompt_tokens: 1 });
    expect(compressor.getStatus().usage_percent).toBeCloseTo(0.0005, 10);
  });
  it('usage 0 when the context length is 0', () => {
    const c = new ContextCompressor({ model: 'm', contextLength: 0, summarize: ok });
    c.updateFromResponse({ prompt_tokens: 10 });
    expect(c.getStatus().usage_percent).toBe(0);
  });
});

describe('state as plain JSON (§7.1, §13.4)', () => {
  it('exportState round-trips through JSON into a new instance', async () => {
    const { compressor, clock } = engine({ summarize: failing });
    await compressor.compress(conversation());
    compressor.updateFromResponse({ prompt_tokens: 99_000, completion_tokens: 10, total_tokens: 99_010 });
    const json = JSON.parse(JSON.stringify(compressor.exportState()));
    const copy = new ContextCompressor({
      model: 'test-model',
      contextLength: 200_000,
      summarize: ok,
      now: clock.now,
      state: json,
    });
    expect(copy.exportState()).toEqual(compressor.exportState());
    expect(copy.compressionCount).toBe(1);
    const other = new ContextCompressor({ model: 'm', contextLength: 200_000, summarize: ok });
    other.restoreState(json);
    expect(other.exportState()).toEqual(compressor.exportState());
  });
  it('restoreState is lenient', () => {
    const c = new ContextCompressor({ model: 'm', contextLength: 200_000, summarize: ok });
    c.restoreState({
      compressionCount: -3,
      previousSummary: 5 as never,
      trippedUntil: 'soon' as never,
      awaitingVerdict: 1 as never,
    });
    expect(c.exportState()).toMatchObject({
      compressionCount: 0,
      previousSummary: null,
      trippedUntil: null,
      awaitingVerdict: false,
    });
  });
  it('exportState returns a copy', () => {
    const c = new ContextCompressor({ model: 'm', contextLength: 200_000, summarize: ok });
    const s = c.exportState();
    s.compressionCount = 99;
    expect(c.compressionCount).toBe(0);
  });
});
