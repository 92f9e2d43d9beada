import { describe, expect, it } from 'vitest';
import {
  type ChatMessage,
  ContextCompressor,
  type ContextCompressorOptions,
  estimateMessagesTokensRough,
  PRUNED_TOOL_OUTPUT,
  SUMMARY_PREFIX,
  type Summarizer,
  SYSTEM_NOTE,
} from '../../../engine/index.js';
import { asst, call, expectSameObjects, fakeClock, recordingSummarizer, sys, tool, user } from './builders.js';
import { exampleA, exampleB } from './examples.js';

const BODY = '## Goal\nsummary body';
const SUMMARY = `${SUMMARY_PREFIX}\n${BODY}`;
const SECRET = 'SECRET-PROVIDER-DIAGNOSTIC-7f3a: invalid api key sk-live-123';

function engine(options: Partial<ContextCompressorOptions> = {}) {
  const clock = fakeClock();
  const recorder = recordingSummarizer(BODY);
  const compressor = new ContextCompressor({
    model: 'test-model',
    contextLength: 200_000,
    summarize: recorder.summarize,
    now: clock.now,
    ...options,
  });
  return { compressor, clock, requests: recorder.requests };
}

const exampleAEngine = (options: Partial<ContextCompressorOptions> = {}) =>
  engine({ contextLength: 500, config: { protectFirstN: 3, protectLastN: 4 }, ...options });

/** A long plain conversation: system + alternating user/assistant rows. */
function conversation(pairs: number, size = 400): ChatMessage[] {
  const rows: ChatMessage[] = [sys('S')];
  for (let i = 0; i < pairs; i++) {
    rows.push(user(`question ${i} ${'q'.repeat(size)}`));
    rows.push(asst(`answer ${i} ${'a'.repeat(size)}`));
  }
  return rows;
}

describe('compress(): worked examples (§8.4)', () => {
  it('Example A: 10 rows, user summary between a1 and the c2/c3 group', async () => {
    const { compressor, requests } = exampleAEngine();
    expect(compressor.tailTokenBudget).toBe(100);
    const input = exampleA();
    const before = structuredClone(input);
    const out = await compressor.compress(input);
    expect(input).toEqual(before);
    expect(out).toHaveLength(10);
    expect(out[0]).toEqual({ role: 'system', content: `${input[0]?.content}\n\n${SYSTEM_NOTE}` });
    expect(out.slice(1, 3)).toEqual(input.slice(1, 3));
    expect(out[3]).toEqual({ role: 'user', content: SUMMARY });
    expectSameObjects(out.slice(4), input.slice(8));
    expect(requests).toHaveLength(1);
    expect(requests[0]?.turnCount).toBe(5);
    expect(requests[0]?.previousSummary).toBeNull();
    expect(requests[0]?.prompt).toContain('TURNS TO SUMMARIZE:\n[USER]: u2');
    expect(compressor.lastStats).toEqual({
      tokensBefore: estimateMessagesTokensRough(input),
      tokensAfter: estimateMessagesTokensRough(out),
      prunedCount: 0,
      droppedCount: 5,
      fallbackUsed: false,
      aborted: false,
      noop: false,
      summary: SUMMARY,
    });
  });

  it('Example B: 26 rows, summary merged into the re-inserted u2 copy', async () => {
    const { compressor, requests } = engine();
    expect(compressor.tailTokenBudget).toBe(10_000);
    const input = exampleB();
    const out = await compressor.compress(input);
    expect(out).toHaveLength(26);
    expect(out[0]?.content).toBe(`S\n\n${SYSTEM_NOTE}`);
    expect(out[1]).toBe(input[1]);
    expect(out[2]).toBe(input[2]);
    expect(out[3]).toEqual({ role: 'user', content: `${SUMMARY}\n\nu2` });
    expectSameObjects(out.slice(4), input.slice(12));
    expect(compressor.lastStats).toMatchObject({ droppedCount: 9, prunedCount: 4, fallbackUsed: false });
    // Phase 1 ran before the summary: the window's old results reach the summarizer as placeholders.
    expect(requests[0]?.prompt).toContain(`[TOOL RESULT call0]: ${PRUNED_TOOL_OUTPUT}`);
    expect(requests[0]?.turnCount).toBe(9);
  });

  it('the next compaction uses the iterative prompt and keeps u2 (own text of the merged row)', async () => {
    const { compressor, requests } = engine();
    const first = await compressor.compress(exampleB());
    const grown = [...first, user('u3'), ...exampleB().slice(4, 20)];
    const second = await compressor.compress(grown);
    expect(requests[1]?.previousSummary).toBe(BODY);
    expect(requests[1]?.prompt).toContain(`PREVIOUS SUMMARY:\n${BODY}\n\nNEW TURNS TO INCORPORATE:\n[USER]: u2`);
    expect(second.filter((m) => m.content === SYSTEM_NOTE || String(m.content).includes(SYSTEM_NOTE))).toHaveLength(1);
    expect(second.some((m) => m.role === 'user' && String(m.content).endsWith('u3'))).toBe(true);
    expect(compressor.compressionCount).toBe(2);
  });

  it('a previous summary from another transcript is ignored and replaced (§8.5.1)', async () => {
    const { compressor, requests } = engine();
    compressor.previousSummary = 'stale summary of another session';
    await compressor.compress(conversation(30));
    expect(requests[0]?.previousSummary).toBeNull();
    expect(requests[0]?.prompt).toContain('TURNS TO SUMMARIZE:');
    expect(compressor.previousSummary).toBe(BODY);
  });

  it('passes the normalised focus topic and the budget', async () => {
    const { compressor, requests } = engine();
    await compressor.compress(conversation(30), { focusTopic: `  ${'t'.repeat(600)} ` });
    expect(requests[0]?.focusTopic).toBe('t'.repeat(500));
    expect(requests[0]?.prompt).toContain(`FOCUS TOPIC: ${'t'.repeat(500)}\n`);
    expect(requests[0]?.budgetTokens).toBe(2000);
    await compressor.compress(conversation(30), { focusTopic: '   ' });
    expect(requests[1]).not.toHaveProperty('focusTopic');
  });

  it('carries extra message properties along unchanged', async () => {
    const { compressor } = exampleAEngine();
    const input = exampleA().map((m, i) => ({ ...m, meta: { i } }) as ChatMessage);
    const out = await compressor.compress(input);
    expect(out[0]).toMatchObject({ meta: { i: 0 } });
    expect(out.at(-1)).toMatchObject({ meta: { i: 13 } });
  });
});

describe('compress(): no-ops (§8.1, §8.3.6)', () => {
  it('insufficient_messages: 24 rows with defaults; new array with the same messages', async () => {
    const { compressor, requests } = engine();
    const input = conversation(11).concat(user('x'), asst('y'));
    expect(input).toHaveLength(25);
    const short = input.slice(0, 24);
    const out = await compressor.compress(short);
    expect(out).not.toBe(short);
    expectSameObjects(out, short);
    expect(requests).toHaveLength(0);
    const tokens = estimateMessagesTokensRough(short);
    expect(compressor.lastStats).toEqual({
      tokensBefore: tokens,
      tokensAfter: tokens,
      prunedCount: 0,
      droppedCount: 0,
      fallbackUsed: false,
      aborted: false,
      noop: 'insufficient_messages',
      summary: null,
    });
    expect(compressor.compressionCount).toBe(0);
  });

  it('no_compressible_window when the tail reaches into the head', async () => {
    const { compressor } = engine();
    const rows: ChatMessage[] = [
      sys(),
      user('u'),
      asst(
        null,
        Array.from({ length: 30 }, (_, i) => call(`c${i}`)),
      ),
    ];
    for (let i = 0; i < 30; i++) rows.push(tool(`c${i}`, 'r'));
    await compressor.compress(rows);
    expect(compressor.lastStats?.noop).toBe('no_compressible_window');
  });

  it('no_compressible_window when the window holds only a summary (T empty)', async () => {
    const { compressor, requests } = engine({ config: { protectFirstN: 1, protectLastN: 3 } });
    compressor.previousSummary = 'B';
    const rows = [sys(), asst(`${SUMMARY_PREFIX}\nB`), user(`${SUMMARY_PREFIX}\nC`), user('a'), asst('b'), user('c')];
    const out = await compressor.compress(rows);
    expect(requests).toHaveLength(0);
    expect(compressor.lastStats?.noop).toBe('no_compressible_window');
    expect(out).toEqual(rows);
  });
});

describe('compress(): summary failures (§9)', () => {
  const throwing: Summarizer = async () => {
    throw new Error(SECRET);
  };

  it('a rejecting summarizer → fallback summary, never the error text', async () => {
    const { compressor } = exampleAEngine({ summarize: throwing });
    const input = exampleA();
    const out = await compressor.compress(input);
    const everything = JSON.stringify({ out, stats: compressor.lastStats, state: compressor.exportState() });
    expect(everything).not.toContain('SECRET');
    expect(everything).not.toContain('sk-live');
    expect(compressor.lastStats).toMatchObject({ fallbackUsed: true, aborted: false, noop: false, droppedCount: 5 });
    expect(out[3]?.content).toMatch(/^\[CONTEXT COMPACTION\] .*\n## Goal\nUser asked: 'u3/);
    expect(out[3]?.content).toContain('Failure class: error.');
    expect(compressor.lastSummaryFailure).toBe('error');
    expect(compressor.compressionCount).toBe(1);
    expect(out).toHaveLength(10);
  });

  it('a synchronously throwing summarizer is handled the same way', async () => {
    const { compressor } = exampleAEngine({
      summarize: (() => {
        throw new Error(SECRET);
      }) as unknown as Summarizer,
    });
    const out = await compressor.compress(exampleA());
    expect(JSON.stringify(out)).not.toContain('SECRET');
    expect(compressor.lastStats?.fallbackUsed).toBe(true);
  });

  it.each([
    ['a non-string', 42],
    ['undefined', undefined],
    ['blank text', '  \n '],
    ['only prefixes', `[CONTEXT SUMMARY]:  ${SUMMARY_PREFIX}\n  `],
  ])('%s reply → failure class empty', async (_label, reply) => {
    const { compressor } = exampleAEngine({ summarize: (async () => reply) as unknown as Summarizer });
    const out = await compressor.compress(exampleA());
    expect(compressor.lastStats?.fallbackUsed).toBe(true);
    expect(out[3]?.content).toContain('Failure class: empty.');
  });

  it('the reply is normalised: stale prefixes never stack', async () => {
    const { compressor } = exampleAEngine({ summarize: async () => `[CONTEXT SUMMARY]: ${BODY}` });
    const out = await compressor.compress(exampleA());
    expect(out[3]?.content).toBe(SUMMARY);
  });

  it('the cooldown skips the summarizer (class cooldown) without extending it; force calls it again', async () => {
    let calls = 0;
    const { compressor, clock } = exampleAEngine({
      summarize: async () => {
        calls++;
        throw new Error(SECRET);
      },
    });
    await compressor.compress(exampleA());
    const cooldown = compressor.exportState().summaryCooldownUntil;
    expect(cooldown).toBe(clock.now() + 600_000);
    clock.advance(60);
    const out = await compressor.compress(exampleA());
    expect(calls).toBe(1);
    expect(out[3]?.content).toContain('Failure class: cooldown.');
    expect(compressor.exportState().summaryCooldownUntil).toBe(cooldown);
    await compressor.compress(exampleA(), { force: true });
    expect(calls).toBe(2);
    expect(compressor.exportState().summaryCooldownUntil).toBe(clock.now() + 600_000);
  });

  it('abort mode: input returned unchanged, only the cooldown is set', async () => {
    const { compressor, clock } = exampleAEngine({
      summarize: throwing,
      config: { protectFirstN: 3, protectLastN: 4, abortOnSummaryFailure: true },
    });
    compressor.previousSummary = 'keep me';
    compressor.updateFromResponse({ prompt_tokens: 400 });
    const stateBefore = compressor.exportState();
    const input = exampleA();
    const before = structuredClone(input);
    const out = await compressor.compress(input);
    expect(out).not.toBe(input);
    expect(out).toEqual(before);
    expectSameObjects(out, input);
    expect(compressor.exportState()).toEqual({ ...stateBefore, summaryCooldownUntil: clock.now() + 600_000 });
    const tokens = estimateMessagesTokensRough(input);
    expect(compressor.lastStats).toEqual({
      tokensBefore: tokens,
      tokensAfter: tokens,
      prunedCount: 0,
      droppedCount: 0,
      fallbackUsed: false,
      aborted: true,
      noop: false,
      summary: null,
    });
    expect(JSON.stringify(compressor.lastStats)).not.toContain('SECRET');
  });

  it('abort during the cooldown does not call the summarizer and does not extend the cooldown', async () => {
    let calls = 0;
    const { compressor, clock } = exampleAEngine({
      summarize: async () => {
        calls++;
        return '';
      },
      config: { protectFirstN: 3, protectLastN: 4, abortOnSummaryFailure: true },
    });
    await compressor.compress(exampleA());
    const until = compressor.exportState().summaryCooldownUntil;
    clock.advance(10);
    await compressor.compress(exampleA());
    expect(calls).toBe(1);
    expect(compressor.lastStats?.aborted).toBe(true);
    expect(compressor.exportState().summaryCooldownUntil).toBe(until);
  });
});

describe('completion state (§8.8)', () => {
  it('a compaction sets count, previous summary, zero reading, awaiting verdict; LLM success clears the streak', async () => {
    const { compressor } = exampleAEngine();
    compressor.updateFromResponse({ prompt_tokens: 450, completion_tokens: 20, total_tokens: 470 });
    await compressor.compress(exampleA());
    expect(compressor.exportState()).toMatchObject({
      compressionCount: 1,
      previousSummary: BODY,
      lastPromptTokens: 0,
      lastCompletionTokens: 20,
      lastTotalTokens: 470,
      awaitingVerdict: true,
      fallbackStreak: 0,
      summaryCooldownUntil: null,
    });
  });
});
