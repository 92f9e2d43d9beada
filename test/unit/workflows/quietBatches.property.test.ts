// Issue #11 §2: the gateway notifies the workflow only of batches that could change a decision (quiet batches,
// engine/quietBatches.ts). Over random event streams — readings below, near and over the threshold, incoming user
// messages, tool rounds, manual compactions, time passing over cooldowns and backoffs, compactions that commit, fall
// back, do nothing, abort, save too little or fail — the compactions decided (event, trigger, tokens, strikes,
// backoff, pause) are exactly those decided when the workflow hears of every batch, and the state it ends with is
// the same.
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
});

// Thresholds below and above the 85 % safety net, hard message limits that bite, automatic compaction off.
const config: fc.Arbitrary<Partial<CompressionConfig>> = fc.record({
  threshold: fc.constantFrom(0.5, 0.9, 0.95),
  smallContextFloor: fc.constantFrom(0.5, 0.75, 0.95),
  hygieneHardMessageLimit: fc.constantFrom(6, 12, 30, 5_000),
  enabled: fc.constantFrom(true, true, true, false),
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
});

describe('quiet batches (issue #11 §2)', () => {
  it('decide exactly the compactions the workflow decides when it hears of every batch', () => {
    let quietBatches = 0;
    let decisions = 0;
    let directTurns = 0;
    let unwaitedTurns = 0;
    fc.assert(
      fc.property(...streams(1), (events, outcomes, configured) => {
        const every = run(events, outcomes, false, configured);
        const loudOnly = run(events, outcomes, true, configured);
        expect(loudOnly.decisions).toEqual(every.decisions);
        expect(finalState(loudOnly)).toEqual(finalState(every));
        // The log's applied position covers every batch in both (quiet ones were applied by the gateway).
        expect(loudOnly.log.appliedSeq).toBe(every.log.batchSeq);
        quietBatches += loudOnly.quiet;
        directTurns += loudOnly.direct;
        unwaitedTurns += loudOnly.unwaitedTurns;
        // A turn that did not wait for the workflow never had a hygiene compaction decided before it.
        expect(loudOnly.unwaitedHygiene).toBe(0);
        decisions += every.decisions.length;
      }),
      { numRuns: 400 },
    );
    // The streams exercise both sides: many batches stayed quiet, and many compactions were decided.
    expect(quietBatches).toBeGreaterThan(1_000);
    expect(decisions).toBeGreaterThan(200);
    expect(directTurns).toBeGreaterThan(500);
    expect(unwaitedTurns).toBeGreaterThan(5);
  });

  it('let a chat turn run in the gateway without waiting only when no hygiene can be decided before it', () => {
    // The workflow may be behind (its notifications not worked off before the next batch or turn arrives): the
    // gateway then judges by what it notified since the rules (migration 0011). Whatever the schedule, no hygiene
    // compaction is ever decided on the batch of a turn that did not wait, and every turn is counted once.
    let unwaited = 0;
    let stale = 0;
    fc.assert(
      fc.property(
        ...streams(40),
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
      { numRuns: 400 },
    );
    // Coverage floors well under what a run gives (unwaited ~770–890, stale ~65–130 over 400 streams).
    expect(unwaited).toBeGreaterThan(400);
    expect(stale).toBeGreaterThan(30);
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
    const small = (prompt: number): SimEvent => ({
      kind: 'batch',
      message: 'exchange',
      rows: 2,
      tokensPerRow: 40,
      prompt,
    });
    const sim = run(
      [small(5_000), small(6_000), small(160_000), small(7_000), small(8_000)],
      [{ status: 'committed', keep: 0.3, similarity: null }],
      true,
    );
    expect(sim.decisions.map((d) => [d.event, d.trigger])).toEqual([[2, 'post_response']]);
    // Quiet: 5,000 and 6,000; loud: the crossing 160,000 and the verdict 7,000 (first reading after the commit);
    // quiet again: 8,000.
    expect(sim.quiet).toBe(3);
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
    expect(loudOnly.quiet).toBe(2);
  });

  it('notify a reading the guard would trip on, a user message that lifts a pause, every batch while compacting', () => {
    const rules = (compressor: Partial<CompressorState>, extra: { paused?: boolean; compacting?: boolean } = {}) =>
      quietRulesOf({
        epoch: 3,
        enabled: true,
        contextLength: 200_000,
        thresholdTokens: 150_000,
        hardMessageLimit: 5_000,
        compressor: normalizeCompressorState(compressor),
        readingBaseTokens: 0,
        compacting: extra.compacting ?? false,
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
    // While a compaction runs nothing is quiet, a turn's batch included.
    const compacting = rules({}, { compacting: true });
    expect(compacting.compacting).toBe(true);
    expect([reading, user].map((batch) => isQuiet(compacting, null, batch))).toEqual([false, false]);
    expect(isQuiet(compacting, null, user, { turnFollows: true })).toBe(false);
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
