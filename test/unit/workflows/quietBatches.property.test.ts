// Issue #11 §2: the gateway notifies the workflow only of batches that could change a decision (quiet batches,
// engine/quietBatches.ts). Over random event streams — readings below, near and over the threshold, incoming user
// messages, tool rounds, manual compactions, time passing over cooldowns and backoffs, compactions that commit, fall
// back, do nothing, abort, save too little or fail, automatic ones running in the background while later events
// arrive — the compactions decided (event, settlement, trigger, tokens, strikes, backoff, pause) and the cache
// recoveries recorded are exactly those decided when the workflow hears of every batch, and the state it ends with
// is the same.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CompressionConfig,
  type CompressorState,
  isQuiet,
  normalizeCompressorState,
  quietRulesOf,
  turnRunsWithoutWorkflow,
} from '../../../engine/index.js';
import { type SimConversation as Sim, SimConversation, type SimEvent, type SimOutcome } from './quietSimulation.js';

const batchEvent: fc.Arbitrary<SimEvent> = fc.record({
  kind: fc.constant('batch' as const),
  message: fc.constantFrom('user', 'exchange', 'assistant', 'tool', 'answered', 'reply-ask'),
  rows: fc.integer({ min: 1, max: 3 }),
  tokensPerRow: fc.oneof(fc.integer({ min: 5, max: 400 }), fc.integer({ min: 1_000, max: 12_000 })),
  // Readings around the 150,000-token threshold of this window and the 170,000-token safety net.
  prompt: fc.option(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1_000, max: 190_000 }) }, fc.constant(0)), {
    nil: null,
  }),
});
// Chat turns: readings below, near and over the threshold; cache reads that do and do not recover after a compaction.
const turnEvent: fc.Arbitrary<SimEvent> = fc.record({
  kind: fc.constant('turn' as const),
  asks: fc.constantFrom('user' as const, 'user' as const, 'tool' as const),
  userTokens: fc.oneof(fc.integer({ min: 5, max: 400 }), fc.integer({ min: 1_000, max: 12_000 })),
  replyTokens: fc.integer({ min: 5, max: 2_000 }),
  prompt: fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1_000, max: 190_000 }) }, fc.constant(0)),
  cacheRead: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 190_000 })),
  // One reply in ten comes with a native checkpoint (SPEC §15.1): the next real reading counts, never theirs.
  checkpoint: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
});
const event: fc.Arbitrary<SimEvent> = fc.oneof(
  { weight: 20, arbitrary: batchEvent },
  { weight: 10, arbitrary: turnEvent },
  { weight: 1, arbitrary: fc.constant({ kind: 'manual' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 1_000, max: 900_000 }) }),
  },
);
const outcome: fc.Arbitrary<SimOutcome> = fc.record({
  status: fc.constantFrom('committed', 'committed', 'fallback', 'noop', 'aborted', 'rejected', 'failed'),
  keep: fc.double({ min: 0.1, max: 0.9, noNaN: true }),
  similarity: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
  // A background compaction settles before the next event, or runs while up to 8 more arrive, some of them after
  // its commit.
  events: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
  commitLead: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4 })),
});

// Thresholds below and above the 85 % safety net, hard message limits that bite, automatic compaction off.
const config: fc.Arbitrary<Partial<CompressionConfig>> = fc.record({
  threshold: fc.constantFrom(0.5, 0.9, 0.95),
  smallContextFloor: fc.constantFrom(0.5, 0.75, 0.95),
  hygieneHardMessageLimit: fc.constantFrom(6, 12, 30, 5_000),
  enabled: fc.constantFrom(true, true, true, false),
});

/** A user message and its reply reporting `prompt` tokens. */
const exchange = (prompt: number): SimEvent => ({
  kind: 'batch',
  message: 'exchange',
  rows: 2,
  tokensPerRow: 40,
  prompt,
});

/** An event stream of at least `minLength` events, the compactions' scripted outcomes, a configuration. */
const streams = (minLength: number) =>
  [fc.array(event, { minLength, maxLength: 160 }), fc.array(outcome, { minLength: 1, maxLength: 6 }), config] as const;

function run(
  events: readonly SimEvent[],
  outcomes: readonly SimOutcome[],
  quiet: boolean,
  configured: Partial<CompressionConfig> = {},
  delivers: readonly boolean[] = [true],
): Sim {
  const sim = new SimConversation({ now: 1_700_000_000_000 }, outcomes, quiet, configured);
  for (const [i, e] of events.entries()) sim.step(i, e, delivers[i % delivers.length] as boolean);
  sim.flush();
  return sim;
}

const finalState = (sim: Sim) => ({
  engine: sim.engine.exportState(),
  activeMessages: sim.state.activeMessages,
  activeTokens: sim.state.activeTokens,
  readingBaseTokens: sim.state.readingBaseTokens,
  processedBatches: sim.state.processedBatches,
  appliedSeq: sim.state.batches.appliedSeq,
  autoSinceModelCall: sim.state.autoSinceModelCall,
  userSinceCompaction: sim.state.userSinceCompaction,
  autoPaused: sim.state.autoPaused,
  hygieneCooldownUntil: sim.state.hygieneCooldownUntil,
  turnSeq: sim.state.turnSeq,
  cache: sim.state.cache,
  nativeBase: sim.state.nativeBase ?? null,
});

/**
 * Runs the stream with the workflow hearing of every batch and with quiet batches, and checks they agree: the
 * compactions decided, the final state, the cache recoveries recorded in order (one the gateway wrote for a quiet
 * reply is one of them: the workflow records it again when the fold reaches it), the applied position (quiet batches
 * were applied by the gateway), and no hygiene decided on a batch a turn did not wait for.
 */
function bothAgree(
  events: readonly SimEvent[],
  outcomes: readonly SimOutcome[],
  configured: Partial<CompressionConfig>,
) {
  const every = run(events, outcomes, false, configured);
  const loudOnly = run(events, outcomes, true, configured);
  expect(loudOnly.decisions).toEqual(every.decisions);
  expect(finalState(loudOnly)).toEqual(finalState(every));
  expect(loudOnly.recoveries).toEqual(every.recoveries);
  for (const recovery of loudOnly.gatewayRecoveries) expect(every.recoveries).toContainEqual(recovery);
  expect(loudOnly.log.appliedSeq).toBe(every.log.batchSeq);
  expect(loudOnly.unwaitedHygiene).toBe(0);
  return { every, loudOnly };
}

describe('quiet batches (issue #11 §2)', () => {
  it('decide exactly the compactions the workflow decides when it hears of every batch', () => {
    let quietBatches = 0;
    let decisions = 0;
    let directTurns = 0;
    fc.assert(
      fc.property(...streams(1), (events, outcomes, configured) => {
        const { every, loudOnly } = bothAgree(events, outcomes, configured);
        quietBatches += loudOnly.quiet;
        directTurns += loudOnly.direct;
        decisions += every.decisions.length;
      }),
      { numRuns: 400 },
    );
    // The streams exercise both sides: many batches stayed quiet, and many compactions were decided.
    expect(quietBatches).toBeGreaterThan(1_000);
    // (About 230 on average; a native checkpoint's reading decides nothing, so the floor leaves room for them.)
    expect(decisions).toBeGreaterThan(150);
    expect(directTurns).toBeGreaterThan(500);
  });

  it('decide the same while background compactions run across the batches and turns that follow', () => {
    // Streams that cross a 100,000-token threshold every few events (readings below it, over it, over the 170,000
    // safety net), with compactions that run while up to 8 events arrive, and time passing over the breaker.
    const reading = fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 1_000, max: 95_000 }) },
      { weight: 2, arbitrary: fc.integer({ min: 100_000, max: 165_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: 170_000, max: 190_000 }) },
    );
    const busy: fc.Arbitrary<SimEvent> = fc.oneof(
      { weight: 12, arbitrary: batchEvent.map((e) => e) },
      {
        weight: 8,
        arbitrary: fc.record({
          kind: fc.constant('batch' as const),
          message: fc.constantFrom('exchange' as const, 'assistant' as const, 'reply-ask' as const),
          rows: fc.integer({ min: 1, max: 3 }),
          tokensPerRow: fc.integer({ min: 5, max: 2_000 }),
          prompt: reading,
        }),
      },
      { weight: 10, arbitrary: turnEvent.chain((t) => reading.map((prompt) => ({ ...t, prompt }))) },
      { weight: 1, arbitrary: fc.constant({ kind: 'manual' as const }) },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 60_000, max: 1_800_000 }) }),
      },
    );
    const running = fc.record({
      status: fc.constantFrom('committed', 'committed', 'committed', 'fallback', 'noop', 'rejected', 'failed'),
      keep: fc.double({ min: 0.1, max: 0.6, noNaN: true }),
      similarity: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
      events: fc.integer({ min: 1, max: 8 }),
      commitLead: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4 })),
    }) as fc.Arbitrary<SimOutcome>;
    let background = 0;
    let quietWhileCompacting = 0;
    let gatewayRecoveries = 0;
    let quietAfterCommit = 0;
    let quietOverThreshold = 0;
    fc.assert(
      fc.property(
        fc.array(busy, { minLength: 20, maxLength: 160 }),
        fc.array(running, { minLength: 1, maxLength: 6 }),
        fc.constantFrom(30, 5_000),
        (events, outcomes, hygieneHardMessageLimit) => {
          const configured = { threshold: 0.5, hygieneHardMessageLimit };
          const { loudOnly } = bothAgree(events, outcomes, configured);
          gatewayRecoveries += loudOnly.gatewayRecoveries.length;
          quietAfterCommit += loudOnly.quietAfterCommit;
          background += loudOnly.backgroundStarted;
          quietWhileCompacting += loudOnly.quietWhileCompacting;
          quietOverThreshold += loudOnly.quietOverThreshold;
        },
      ),
      { numRuns: 300 },
    );
    // Coverage floors well under what a run gives (~690 compactions, ~1,900 batches folded while one ran, ~260 of
    // them after its commit, ~130 readings at or over the threshold, ~260 recoveries completed by quiet replies, over
    // 300 streams).
    expect(background).toBeGreaterThan(300);
    expect(quietWhileCompacting).toBeGreaterThan(1_000);
    expect(gatewayRecoveries).toBeGreaterThan(100);
    expect(quietAfterCommit).toBeGreaterThan(100);
    expect(quietOverThreshold).toBeGreaterThan(50);
  });

  it('let a chat turn run in the gateway without waiting only when no hygiene can be decided before it', () => {
    // The workflow may be behind (its notifications not worked off before the next batch or turn arrives): the
    // gateway then judges by what it notified since the rules (migration 0011). Whatever the schedule, no hygiene
    // compaction is ever decided on the batch of a turn that did not wait, and every turn is counted once.
    // Besides the mixed streams, turn-heavy ones whose replies often read over the threshold but under the safety
    // net (notified, so the workflow has something to be behind on).
    const loudTurn: fc.Arbitrary<SimEvent> = turnEvent.chain((t) =>
      fc
        .oneof(fc.integer({ min: 1_000, max: 90_000 }), fc.integer({ min: 150_000, max: 168_000 }))
        .map((prompt) => ({ ...t, prompt })),
    );
    const turnHeavy = fc.array(fc.oneof({ weight: 3, arbitrary: loudTurn }, { weight: 1, arbitrary: event }), {
      minLength: 40,
      maxLength: 160,
    });
    let unwaited = 0;
    let stale = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          { weight: 1, arbitrary: fc.array(event, { minLength: 40, maxLength: 160 }) },
          { weight: 3, arbitrary: turnHeavy },
        ),
        streams(40)[1],
        streams(40)[2],
        fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
        (events, outcomes, configured, delivers) => {
          const sim = run(events, outcomes, true, configured, delivers);
          expect(sim.unwaitedHygiene).toBe(0);
          const turns = events.filter((e) => e.kind === 'turn').length;
          expect(sim.state.turnSeq).toBe(turns);
          expect(sim.state.cache.turns).toBe(turns);
          expect(sim.state.batches.appliedSeq).toBe(sim.log.batchSeq);
          unwaited += sim.unwaitedTurns;
          stale += sim.unwaitedStale;
        },
      ),
      { numRuns: 800 },
    );
    // Coverage floors well under what a run gives (~250–600 over 800 streams, heavy-tailed; nearly all judged by
    // what was notified since the rules: with current rules, a turn's batch that is not quiet could start a
    // compaction before the model call, unless it only lifts a pause).
    expect(unwaited).toBeGreaterThan(100);
    expect(stale).toBeGreaterThan(90);
  });

  it('keep a conversation far below its threshold out of the workflow', () => {
    const events: SimEvent[] = Array.from({ length: 50 }, (_, i) => ({
      kind: 'batch',
      message: i % 2 === 0 ? 'user' : 'exchange',
      rows: 2,
      tokensPerRow: 50,
      prompt: 2_000 + i * 100,
    }));
    const sim = run(events, [{ status: 'committed', keep: 0.5, similarity: null }], true);
    expect(sim.decisions).toEqual([]);
    // Every batch was quiet; the flush (the next notification) delivers them all.
    expect(sim.quiet).toBe(50);
    expect(sim.state.processedBatches).toBe(50);
    expect(sim.engine.exportState().lastPromptTokens).toBe(2_000 + 49 * 100);
  });

  it('notify the reading that crosses the threshold, and the verdict after the compaction', () => {
    const sim = run(
      [exchange(5_000), exchange(6_000), exchange(160_000), exchange(7_000), exchange(8_000)],
      [{ status: 'committed', keep: 0.3, similarity: null }],
      true,
    );
    expect(sim.decisions.map((d) => [d.event, d.trigger])).toEqual([[2, 'post_response']]);
    // Quiet: 5,000 and 6,000; loud: the crossing 160,000; quiet again: the verdict 7,000 (first reading after the
    // commit: below the threshold it clears the strikes the same when applied later, and the settlement's new epoch
    // made the rules current again) and 8,000.
    expect(sim.quiet).toBe(4);
    expect(sim.engine.exportState()).toMatchObject({ lastPromptTokens: 8_000, ineffectiveStrikes: 0 });
  });

  it('fold the batches that arrive while a background compaction runs, applied before its outcome', () => {
    const user: SimEvent = { kind: 'batch', message: 'user', rows: 1, tokensPerRow: 40, prompt: null };
    // 160,000 starts a compaction that runs while the next three arrive; it settles before the sixth.
    const events = [exchange(5_000), exchange(160_000), exchange(7_000), user, exchange(9_000), exchange(10_000)];
    const outcomes: SimOutcome[] = [{ status: 'committed', keep: 0.3, similarity: null, events: 3 }];
    const every = run(events, outcomes, false);
    const loudOnly = run(events, outcomes, true);
    expect(every.decisions.map((d) => [d.event, d.trigger, d.status])).toEqual([[1, 'post_response', 'committed']]);
    expect(loudOnly.decisions).toEqual(every.decisions);
    expect(finalState(loudOnly)).toEqual(finalState(every));
    // Only the crossing reading was notified: the three batches meanwhile were folded, and so was the one after.
    expect(loudOnly.quietWhileCompacting).toBe(3);
    expect(loudOnly.quiet).toBe(5);
    // The readings of the batches before the commit were applied before its outcome (their fold first), so the
    // first reading after it is the verdict: 10,000 — below the threshold, no strike.
    expect(loudOnly.engine.exportState()).toMatchObject({ lastPromptTokens: 10_000, ineffectiveStrikes: 0 });
  });

  it('notify, while a background compaction runs, a reading over the threshold and a message above the safety net', () => {
    const user: SimEvent = { kind: 'batch', message: 'user', rows: 1, tokensPerRow: 40, prompt: null };
    const events = [exchange(160_000), exchange(7_000), exchange(172_000), user, exchange(9_000)];
    const outcomes: SimOutcome[] = [{ status: 'committed', keep: 0.3, similarity: null, events: 6 }];
    const every = run(events, outcomes, false);
    const loudOnly = run(events, outcomes, true);
    // The user message after a reading above 85 % waits for the running compaction: settled at its event, after
    // which no hygiene is needed.
    expect(every.decisions.map((d) => [d.event, d.trigger, d.settledAt])).toEqual([[0, 'post_response', 3]]);
    expect(loudOnly.decisions).toEqual(every.decisions);
    expect(finalState(loudOnly)).toEqual(finalState(every));
    // Folded while it ran: 7,000 and 172,000 (over the threshold, but no verdict is awaited and no strike stands: it
    // sets the reading only); notified: the user message, above the safety net by that reading. After the
    // settlement 9,000 is quiet again.
    expect(loudOnly.quietWhileCompacting).toBe(2);
    expect(loudOnly.quiet).toBe(3);
  });

  it('carry a model call folded before a quiet user message to the next decision (SPEC §7.6)', () => {
    const batch = (message: 'user' | 'tool' | 'exchange', tokensPerRow: number, prompt: number | null = null) =>
      ({ kind: 'batch', message, rows: 1, tokensPerRow, prompt }) as SimEvent;
    // A compaction commits; the first user message after it is notified (new epoch) while no model call has
    // happened since; a tool round (a model call) and a small user message are quiet; a large user message crosses
    // the threshold: the preflight check may compact again because the folded tool round was a model call.
    const events = [batch('exchange', 10, 160_000), batch('user', 10), batch('tool', 10), batch('user', 10)];
    events.push(batch('user', 160_000));
    const outcomes: SimOutcome[] = [{ status: 'committed', keep: 0.5, similarity: null }];
    const every = run(events, outcomes, false);
    const loudOnly = run(events, outcomes, true);
    expect(every.decisions.map((d) => [d.event, d.trigger])).toEqual([
      [0, 'post_response'],
      [4, 'preflight'],
    ]);
    expect(loudOnly.decisions).toEqual(every.decisions);
    // Quiet: the user message after the compaction (the settlement made the rules current), the tool round and
    // the small user message.
    expect(loudOnly.quiet).toBe(3);
  });

  it('notify a reading the guard would trip on, a user message that lifts a pause, every batch while compacting', () => {
    const rules = (
      compressor: Partial<CompressorState>,
      extra: { paused?: boolean; compacting?: boolean; folds?: boolean } = {},
    ) =>
      quietRulesOf({
        epoch: 3,
        enabled: true,
        contextLength: 200_000,
        thresholdTokens: 150_000,
        hardMessageLimit: 5_000,
        compressor: normalizeCompressorState(compressor),
        readingBaseTokens: 0,
        compacting: extra.compacting ?? false,
        foldsAtSettle: extra.folds ?? false,
        pausedAtFixedPoint: extra.paused ?? false,
        turnsQuiet: true,
        gatewayTurns: true,
      });
    const base = { seq: 8, version: 9, activeMessages: 20, activeTokens: 2_000, incoming: null, freshAssistant: true };
    const reading = { ...base, users: 0, usage: { prompt_tokens: 3_000 }, usageTailTokens: 50 };
    const user = { ...base, users: 1, freshAssistant: false, incoming: { rows: 1, tokens: 40 } };
    expect(isQuiet(rules({})!, null, reading)).toBe(true);
    // Two fallbacks in a row and the guard not yet tripped: the trip time depends on when the reading is applied.
    expect(isQuiet(rules({ fallbackStreak: 2, trippedUntil: null })!, null, reading)).toBe(false);
    expect(isQuiet(rules({ fallbackStreak: 2, trippedUntil: 1_700_000_000_000 })!, null, reading)).toBe(true);
    expect(isQuiet(rules({})!, null, user)).toBe(true);
    expect(isQuiet(rules({}, { paused: true })!, null, user)).toBe(false);
    expect(isQuiet(rules({}, { paused: true })!, null, reading)).toBe(true);
    // While a compaction runs nothing is quiet, a turn's batch included, unless the workflow folds at settlement.
    const compacting = rules({}, { compacting: true });
    expect(compacting.compacting).toBe(true);
    expect(compacting.foldsAtSettle).toBeUndefined();
    expect([reading, user].map((batch) => isQuiet(compacting, null, batch))).toEqual([false, false]);
    expect(isQuiet(compacting, null, user, { turnFollows: true })).toBe(false);
    expect(rules({}, { folds: true }).foldsAtSettle).toBeUndefined();
    const folding = rules({ lastPromptTokens: 160_000 }, { compacting: true, folds: true });
    expect(folding).toMatchObject({ compacting: true, foldsAtSettle: true, turnsQuiet: true });
    // Folding while it runs: a reading below the threshold, a user message and a turn's batch are quiet even with
    // the held reading over the threshold (no preflight check starts a second compaction)…
    expect([reading, user].map((batch) => isQuiet(folding, null, batch))).toEqual([true, true]);
    expect(isQuiet(folding, null, user, { turnFollows: true })).toBe(true);
    expect(isQuiet(folding, null, { ...reading, turn: reading.usage as never, readVersion: 9 })).toBe(true);
    // …and a reading at or over the threshold, while no verdict is awaited and no strike stands; while one is, or
    // a strike stands (a reading below the threshold folded before it would clear the strike), it is not…
    const atThreshold = { ...reading, usage: { prompt_tokens: 150_000 } };
    expect(folding.overQuiet).toBe(true);
    expect(isQuiet(folding, null, atThreshold)).toBe(true);
    expect(isQuiet(rules({}, { compacting: true }), null, atThreshold)).toBe(false);
    const verdict = rules({ lastPromptTokens: 160_000, awaitingVerdict: true }, { compacting: true, folds: true });
    expect(verdict.overQuiet).toBeUndefined();
    expect(isQuiet(verdict, null, atThreshold)).toBe(false);
    const struck = rules({ lastPromptTokens: 160_000, ineffectiveStrikes: 1 }, { compacting: true, folds: true });
    expect(isQuiet(struck, null, atThreshold)).toBe(false);
    // …nor, when nothing runs, a reading at the threshold (its in-loop check may compact); a message above the safety
    // net and a guard about to trip never are.
    expect(isQuiet(rules({}), null, atThreshold)).toBe(false);
    const high = rules({ lastPromptTokens: 170_000 }, { compacting: true, folds: true });
    expect(isQuiet(high, null, user)).toBe(false);
    const tripping = rules({ fallbackStreak: 2, trippedUntil: null }, { compacting: true, folds: true });
    expect(isQuiet(tripping, null, reading)).toBe(false);
    // …but a turn may still run in the gateway, its batch notified first, while no hygiene can run: neither by the
    // reading (170,000 is 85 % here) nor, should the compaction settle first and leave none, by the estimate.
    expect(turnRunsWithoutWorkflow(compacting, null, user)).toBe(true);
    expect(turnRunsWithoutWorkflow(rules({ lastPromptTokens: 169_000 }, { compacting: true }), null, user)).toBe(true);
    expect(turnRunsWithoutWorkflow(rules({ lastPromptTokens: 170_000 }, { compacting: true }), null, user)).toBe(false);
    const estimatedHigh = { ...user, activeTokens: 175_000 };
    expect(turnRunsWithoutWorkflow(rules({ lastPromptTokens: 3_000 }, { compacting: true }), null, estimatedHigh)).toBe(
      false,
    );
    expect(turnRunsWithoutWorkflow({ ...compacting, gatewayTurns: false }, null, user)).toBe(false);
  });
});
