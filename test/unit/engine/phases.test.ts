import { describe, expect, it } from 'vitest';
import {
  buildFallbackSummary,
  buildSummaryRequest,
  type ChatMessage,
  ContextCompressor,
  compactionStats,
  estimateMessagesTokensRough,
  interpretSummaryReply,
  planCompaction,
  prunePhase,
  reassemblePhase,
  SUMMARY_PREFIX,
  type Summarizer,
} from '../../../engine/index.js';
import { fakeClock } from './builders.js';
import { exampleB } from './examples.js';

const json = <T>(value: T): T => JSON.parse(JSON.stringify(value));

/** Runs the phases the way a Temporal host would: every hand-over goes through JSON. */
async function compressViaPhases(engine: ContextCompressor, input: ChatMessage[], summarize: Summarizer) {
  engine.beginCompaction({ force: false });
  const previousSummary = engine.previousSummary;
  const plan = json(planCompaction(json(input), json(engine.compactionLimits())));
  if (plan.noop !== false) throw new Error('unexpected no-op');
  const pruned = json(prunePhase(json(input), plan));
  const summaryPlan = json(
    buildSummaryRequest(pruned.messages, plan, { previousSummary, contextLength: engine.contextLength }),
  );
  if (summaryPlan.noop !== false) throw new Error('unexpected no-op');
  let attempt = interpretSummaryReply(await summarize(summaryPlan.request).catch(() => null));
  let failure = false;
  if (!attempt.ok) {
    failure = true;
    attempt = { ok: true, body: buildFallbackSummary(json(input), plan, { previousSummary, failureClass: 'error' }) };
  }
  const output = json(reassemblePhase(pruned.messages, json(input), plan, attempt.body, { previousSummary }));
  const stats = compactionStats({
    tokensBefore: estimateMessagesTokensRough(input),
    output,
    prunedCount: pruned.prunedCount,
    plan,
    fallbackUsed: failure,
    summaryBody: attempt.body,
  });
  engine.recordCompaction({
    summaryBody: attempt.body,
    fallbackUsed: failure,
    summarizerCalled: true,
    failureClass: failure ? 'error' : undefined,
    stats,
  });
  return output;
}

describe('phase functions (§8.1 as separate plain-JSON steps)', () => {
  it.each([
    ['an LLM summary', async () => '## Goal\nphased'],
    [
      'a failing summarizer',
      async () => {
        throw new Error('nope');
      },
    ],
  ] as [string, Summarizer][])('composing the phases equals compress() with %s', async (_label, summarize) => {
    const clock = fakeClock();
    const direct = new ContextCompressor({ model: 'm', contextLength: 200_000, summarize, now: clock.now });
    const phased = new ContextCompressor({ model: 'm', contextLength: 200_000, summarize, now: clock.now });
    const expected = await direct.compress(exampleB());
    const actual = await compressViaPhases(phased, exampleB(), summarize);
    expect(actual).toEqual(expected);
    expect(phased.exportState()).toEqual(direct.exportState());
    expect(phased.lastStats).toEqual(direct.lastStats);
  });

  it('plan and request are plain JSON', () => {
    const plan = planCompaction(exampleB(), {
      protectFirstN: 3,
      protectLastN: 20,
      minTailUserMessages: 1,
      tailTokenBudget: 10_000,
      previousSummary: null,
    });
    expect(json(plan)).toEqual(plan);
    const pruned = prunePhase(exampleB(), plan);
    const request = buildSummaryRequest(pruned.messages, plan, { previousSummary: null, contextLength: 200_000 });
    expect(json(request)).toEqual(request);
  });

  it('planCompaction already reports the §8.5.1 no-op (window of pure summaries)', () => {
    const summary = (body: string): ChatMessage => ({ role: 'assistant', content: `${SUMMARY_PREFIX}\n${body}` });
    const rows: ChatMessage[] = [
      { role: 'system', content: 'S' },
      summary('B'),
      { ...summary('C'), role: 'user' },
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ];
    const limits = {
      protectFirstN: 1,
      protectLastN: 3,
      minTailUserMessages: 1,
      tailTokenBudget: 10_000,
      previousSummary: 'B',
    };
    expect(planCompaction(rows, limits)).toEqual({
      headEnd: 1,
      cut: 3,
      reinsertIndex: null,
      noop: 'no_compressible_window',
    });
    const merged = [
      ...rows.slice(0, 2),
      { role: 'user' as const, content: `${SUMMARY_PREFIX}\nB\n\nmine` },
      ...rows.slice(3),
    ];
    expect(planCompaction(merged, limits).noop).toBe(false);
  });

  it('interpretSummaryReply classifies replies', () => {
    expect(interpretSummaryReply(' [CONTEXT SUMMARY]: x ')).toEqual({ ok: true, body: 'x' });
    expect(interpretSummaryReply('')).toEqual({ ok: false, failureClass: 'empty' });
    expect(interpretSummaryReply(null)).toEqual({ ok: false, failureClass: 'empty' });
  });

  it('recordNoop and recordAbort apply the same state changes as compress()', () => {
    const clock = fakeClock();
    const engine = new ContextCompressor({
      model: 'm',
      contextLength: 200_000,
      summarize: async () => 'x',
      now: clock.now,
    });
    engine.recordNoop('insufficient_messages', 10);
    expect(engine.exportState().structuralBackoffUntil).toBe(clock.now() + 300_000);
    expect(engine.lastStats?.noop).toBe('insufficient_messages');
    engine.recordAbort(false, 10, 'cooldown');
    expect(engine.exportState().summaryCooldownUntil).toBeNull();
    engine.recordAbort(true, 10, 'error');
    expect(engine.exportState().summaryCooldownUntil).toBe(clock.now() + 600_000);
    expect(engine.lastStats).toMatchObject({ aborted: true, tokensBefore: 10, tokensAfter: 10 });
    expect(engine.lastSummaryFailure).toBe('error');
    expect(engine.compressionCount).toBe(0);
  });
});
