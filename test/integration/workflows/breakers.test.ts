// The host's brakes on runaway automatic compaction (SPEC §19, issue #9 §10) on the real services: the frequency
// breaker per conversation and per tenant (the hygiene safety net and manual compaction still work), the fixed-point
// detector (lifted by new user input) and the minimum-gain rule (a result that is not smaller is never committed).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import {
  frequencyBreakerNotice,
  NOTICE_FIXED_POINT,
  tenantBreakerNotice,
} from '../../../workflows/conversation/brakes.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, batch, compactionsOf, newTenant } from './transcript.js';

const SHORT_SUMMARY = '## Goal\nKeep going.\n## Progress\n### Done\n- earlier rounds';
// Far longer than any window these tests compact (~8,000 estimated tokens against a transcript of ~2,000).
const LONG_SUMMARY = `## Goal\nKeep going.\n## Progress\n${'- a needlessly detailed account of the work\n'.repeat(700)}`;

let testDb: TestDatabase;
let stack: TestStack;
let summaryBody = SHORT_SUMMARY;
const summarizer: Summarizer = async () => summaryBody;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});
// Every test starts with the same, constant summary (a fixed point only without user input in between).
beforeEach(() => {
  summaryBody = SHORT_SUMMARY;
});

// 100,000-token window: threshold floor(100,000 × 0.75) = 75,000 (small-context floor), hygiene at 85,000.
const CTX100K = { model: 'acme-chat', contextLength: 100_000 };
const HIGH = 80_000; // over the in-loop threshold, under hygiene's 85 %
const LOW = 30_000; // under the threshold: resets the ineffective strikes (SPEC §7.3)

/** One agent round (user → tool call → tool → answer); its final assistant message carries the reading. */
function round(tag: string): ChatMessage[] {
  return agentTranscript(1, { tag }).slice(1);
}

/** Agent steps without any user message (tool call → tool → answer): no new user input. */
function steps(tag: string): ChatMessage[] {
  return round(tag).slice(1);
}

async function start(tenant: string, conv: string, messages = agentTranscript(8)): Promise<void> {
  await stack.client.submit(tenant, conv, batch(messages), CTX100K);
  await stack.client.settled(tenant, conv);
}

/** A batch whose model call reported `prompt_tokens`, decided on before the next one (as a real client's is). */
async function reading(tenant: string, conv: string, messages: ChatMessage[], promptTokens: number) {
  await stack.client.submit(tenant, conv, batch(messages, { prompt_tokens: promptTokens }), CTX100K);
  return stack.client.settled(tenant, conv);
}

const triggersOf = async (tenant: string) =>
  (await compactionsOf(testDb.db, tenant)).map((r) => `${r.trigger}:${r.status}`);

describe('frequency breaker per conversation (SPEC §19 max_auto_per_hour)', () => {
  it('pauses automatic compaction after the limit, announces it once; hygiene and manual still compact', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, max_auto_per_hour: 2 });
    const conv = randomUUID();
    await start(t, conv);
    // Three automatic compactions' worth of readings: high, then low (so no strike builds up), and again.
    for (let i = 0; i < 3; i++) {
      await reading(t, conv, round(`high${i}`), HIGH);
      await reading(t, conv, round(`low${i}`), LOW);
    }
    const paused = await reading(t, conv, round('more'), HIGH);
    expect(await triggersOf(t)).toEqual(['post_response:committed', 'post_response:committed']);
    expect(paused.compressionCount).toBe(2);
    expect(paused.autoPaused).toBe('frequency');
    expect(paused.autoCompactionsLastHour).toBe(2);
    // The anti-thrash guard did not do this: no strike, nothing blocked.
    expect(paused.ineffectiveStrikes).toBe(0);
    expect(paused.blockedBy).toBeNull();
    const notice = frequencyBreakerNotice(2, 2);
    expect(notice).toBe(
      'Automatic compression paused: 2 compactions in the last hour (limit 2). The safety net still applies.',
    );
    expect(paused.notices.filter((n) => n === notice)).toHaveLength(1);

    // The safety net: a reply reporting 90 % and a new user message — hygiene compacts before the turn.
    await stack.client.submit(
      t,
      conv,
      batch(
        [
          { role: 'assistant', content: 'answer' },
          { role: 'user', content: 'next question' },
        ],
        {
          prompt_tokens: 90_000,
        },
      ),
      CTX100K,
    );
    const net = await stack.client.settled(t, conv);
    expect(await triggersOf(t)).toEqual(['post_response:committed', 'post_response:committed', 'hygiene:committed']);
    expect(net.lastCompaction?.trigger).toBe('hygiene');
    expect(net.compressionCount).toBe(3);

    // Still paused after further high readings, and the notice is still there exactly once.
    await reading(t, conv, round('after-net'), LOW);
    const still = await reading(t, conv, round('again'), HIGH);
    expect(still.autoPaused).toBe('frequency');
    expect(still.compressionCount).toBe(3);
    expect(still.notices.filter((n) => n === notice)).toHaveLength(1);

    // Manual compaction is never paused by the breaker.
    const manual = await stack.client.compact(t, conv);
    expect(manual.status).toBe('committed');
    expect((await triggersOf(t)).at(-1)).toBe('manual:committed');
  });
});

describe('frequency breaker per tenant (SPEC §19 tenant_max_auto_per_hour)', () => {
  it("counts all of the tenant's conversations; another tenant is unaffected", async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, max_auto_per_hour: 50, tenant_max_auto_per_hour: 2 });
    const [a, b] = [randomUUID(), randomUUID()];
    await start(t, a);
    await start(t, b);
    expect((await reading(t, a, round('a0'), HIGH)).compressionCount).toBe(1);
    expect((await reading(t, b, round('b0'), HIGH)).compressionCount).toBe(1);
    // A third automatic compaction, in either conversation, is refused by the tenant's breaker.
    await reading(t, a, round('a1'), LOW);
    const pausedA = await reading(t, a, round('a2'), HIGH);
    expect(pausedA.compressionCount).toBe(1);
    expect(pausedA.autoPaused).toBe('tenant_frequency');
    // Only this conversation's own compaction counts for its per-conversation figure.
    expect(pausedA.autoCompactionsLastHour).toBe(1);
    const notice = tenantBreakerNotice(2, 2);
    expect(pausedA.notices.filter((n) => n === notice)).toHaveLength(1);
    await reading(t, b, round('b1'), LOW);
    const pausedB = await reading(t, b, round('b2'), HIGH);
    expect(pausedB.compressionCount).toBe(1);
    expect(pausedB.autoPaused).toBe('tenant_frequency');
    expect(await triggersOf(t)).toEqual(['post_response:committed', 'post_response:committed']);

    // A tenant without the key: three automatic compactions in one conversation, none paused.
    const other = await newTenant(testDb.db, { protect_last_n: 4 });
    const c = randomUUID();
    await start(other, c);
    for (let i = 0; i < 3; i++) {
      await reading(other, c, round(`c-high${i}`), HIGH);
      await reading(other, c, round(`c-low${i}`), LOW);
    }
    const free = await stack.client.settled(other, c);
    expect(free.compressionCount).toBe(3);
    expect(free.autoPaused).toBeNull();
    expect(await triggersOf(other)).toEqual(Array(3).fill('post_response:committed'));
  });
});

describe('fixed-point detector (SPEC §19 fixed_point_similarity)', () => {
  /**
   * An autonomous agent: one task, then tool steps only (the task sits in the protected head, so no user message
   * anchors the tail, SPEC §8.3.4, and every compaction has a window); compaction #1, then a reading under the threshold.
   */
  async function autonomousAgent(t: string, conv: string): Promise<void> {
    await start(t, conv, [...agentTranscript(1), ...Array.from({ length: 8 }, (_, i) => steps(`t${i}`)).flat()]);
    expect((await reading(t, conv, steps('s0'), HIGH)).compressionCount).toBe(1);
    await reading(t, conv, steps('s1'), LOW);
  }

  it('stops automatic compaction when the summary stops changing without user input, until a user message', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4 });
    const conv = randomUUID();
    await autonomousAgent(t, conv);
    // #2 without user input but with a different summary: no fixed point.
    summaryBody = '## Goal\nShip the parser.\n## Progress\n### In Progress\n- rewriting the tokenizer tables';
    const changed = await reading(t, conv, steps('s2'), HIGH);
    expect(changed.compressionCount).toBe(2);
    expect(changed.autoPaused).toBeNull();
    // #3: the same summary as #2 and still no user message since: the fixed point.
    await reading(t, conv, steps('s3'), LOW);
    const fixed = await reading(t, conv, steps('s4'), HIGH);
    expect(fixed.compressionCount).toBe(3);
    expect(fixed.autoPaused).toBe('fixed_point');
    expect(fixed.notices.filter((n) => n === NOTICE_FIXED_POINT)).toHaveLength(1);

    // Further high readings (also after a low one) do not compact.
    await reading(t, conv, steps('s5'), HIGH);
    await reading(t, conv, steps('s6'), LOW);
    const still = await reading(t, conv, steps('s7'), HIGH);
    expect(still.compressionCount).toBe(3);
    expect(still.autoPaused).toBe('fixed_point');
    expect(await triggersOf(t)).toEqual(Array(3).fill('post_response:committed'));

    // New user input (answered within the batch, so no preflight check runs) lifts the pause ...
    const lifted = await reading(t, conv, round('user'), LOW);
    expect(lifted.autoPaused).toBeNull();
    expect(lifted.compressionCount).toBe(3);
    // ... and the next high reading compacts again; with the user message in between it is no fixed point.
    const again = await reading(t, conv, steps('s8'), HIGH);
    expect(again.compressionCount).toBe(4);
    expect(again.autoPaused).toBeNull();
    expect(again.notices.filter((n) => n === NOTICE_FIXED_POINT)).toHaveLength(1);
  });

  it('only a real user message (SPEC §1.3) lifts the pause: not a blank one, not a synthetic summary', async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4 });
    // User-role messages the user did not write (SPEC §1.3 rules 3 and 4), each answered within its batch.
    const notReal = ['   ', '[CONTEXT SUMMARY]: notes carried over by the host'];
    const seen: { content: string; autoPaused: unknown; compressionCount: number }[] = [];
    for (const content of notReal) {
      const conv = randomUUID();
      await autonomousAgent(t, conv);
      expect((await reading(t, conv, steps('s2'), HIGH)).autoPaused).toBe('fixed_point');
      const status = await reading(t, conv, [{ role: 'user', content }, ...steps('x')], LOW);
      const next = await reading(t, conv, steps('s3'), HIGH);
      seen.push({ content, autoPaused: status.autoPaused, compressionCount: next.compressionCount });
    }
    expect(seen).toEqual(notReal.map((content) => ({ content, autoPaused: 'fixed_point', compressionCount: 2 })));
  });
});

describe('minimum gain (SPEC §19 min_gain_tokens)', () => {
  it('an automatic compaction that would not shrink the transcript is not committed and is a strike', async () => {
    summaryBody = LONG_SUMMARY;
    const t = await newTenant(testDb.db, { protect_last_n: 4 });
    const conv = randomUUID();
    await start(t, conv);
    const session = (await stack.client.settled(t, conv)).sessionId;
    await reading(t, conv, round('r0'), LOW);
    const before = await activeTranscript(testDb.db, t, session);

    const first = await reading(t, conv, steps('s0'), HIGH);
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => `${r.trigger}:${r.status}`)).toEqual(['post_response:rejected']);
    const stats = records[0]!.stats as unknown as { tokensBefore: number; tokensAfter: number };
    expect(stats.tokensAfter).toBeGreaterThanOrEqual(stats.tokensBefore);
    // The transcript is exactly as it was, plus the batch itself.
    const after = await activeTranscript(testDb.db, t, session);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after).toHaveLength(before.length + 3);
    expect(after.every((r) => r.summary_body === null)).toBe(true);
    expect(first.compressionCount).toBe(0);
    expect(first.lastCompaction?.status).toBe('rejected');
    expect(first.ineffectiveStrikes).toBe(1);
    expect(first.blockedBy).toBeNull();
    const noGain = first.notices.filter((n) =>
      n.startsWith('Compaction not committed: the compacted transcript would not have been smaller'),
    );
    expect(noGain).toHaveLength(1);

    // A second one trips the anti-thrash guard (two strikes, SPEC §7.4).
    const second = await reading(t, conv, steps('s1'), HIGH);
    expect(await triggersOf(t)).toEqual(['post_response:rejected', 'post_response:rejected']);
    expect(second.ineffectiveStrikes).toBe(2);
    expect(second.blockedBy).toBe('ineffective');
    expect(second.compressionCount).toBe(0);

    // A manual compaction with the same long summary is committed: the rule is for automatic ones only.
    const manual = await stack.client.compact(t, conv);
    expect(manual.status).toBe('committed');
    const live = await activeTranscript(testDb.db, t, manual.sessionId);
    expect(live.filter((r) => r.summary_body !== null)).toHaveLength(1);
  });

  it("honours the tenant's min_gain_tokens: a compaction saving less than required is rejected", async () => {
    const t = await newTenant(testDb.db, { protect_last_n: 4, min_gain_tokens: 1_000_000 });
    const conv = randomUUID();
    await start(t, conv);
    const status = await reading(t, conv, round('r0'), HIGH);
    expect(await triggersOf(t)).toEqual(['post_response:rejected']);
    expect(status.compressionCount).toBe(0);
    expect(status.ineffectiveStrikes).toBe(1);
  });
});
