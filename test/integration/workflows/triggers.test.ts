// Automatic compaction triggers on the real services: the in-loop check at the resolved threshold (SPEC §7.6),
// the gateway hygiene pre-step (SPEC §11), the anti-thrash guard (SPEC §7.4) and per-tenant policy overrides.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import { setTenantPolicy } from '../../../infra/db/tenants.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { agentTranscript, batch, compactionsOf, newTenant } from './transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
const summarizer: Summarizer = async () => '## Goal\nKeep going.\n## Progress\n### Done\n- earlier rounds';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  stack = await createTestStack({ db: testDb.db, summarizer });
});
afterAll(async () => {
  await stack?.close();
  await testDb?.drop();
});

const tenant = (policy: Record<string, unknown> = {}) => newTenant(testDb.db, policy);

/** One agent round whose final assistant message reports the provider's usage. */
function round(i: number): ChatMessage[] {
  return agentTranscript(1, { tag: `r${i}` }).slice(1);
}

// 100,000-token window: threshold floor(100,000 × 0.75) = 75,000 (small-context floor), hygiene at 85,000.
const CTX100K = { model: 'acme-chat', contextLength: 100_000 };

describe('in-loop check (SPEC §7.6)', () => {
  it('compacts after a reported usage at the resolved threshold, not below it', async () => {
    const t = await tenant({ protect_last_n: 4 });
    const below = randomUUID();
    await stack.client.submit(t, below, batch(agentTranscript(8)), CTX100K);
    await stack.client.submit(t, below, batch(round(9), { prompt_tokens: 74_999 }), CTX100K);
    const quiet = await stack.client.settled(t, below);
    expect(quiet.thresholdTokens).toBe(75_000);
    expect(quiet.compressionCount).toBe(0);
    expect(quiet.lastPromptTokens).toBe(74_999);

    const at = randomUUID();
    await stack.client.submit(t, at, batch(agentTranscript(8)), CTX100K);
    await stack.client.submit(t, at, batch(round(9), { prompt_tokens: 75_000 }), CTX100K);
    const compacted = await stack.client.settled(t, at);
    expect(compacted.compressionCount).toBe(1);
    expect(compacted.lastCompaction).toMatchObject({ trigger: 'post_response', status: 'committed' });
    // The compaction resets the reading: the next request's real reading decides the verdict (§7.6).
    expect(compacted.lastPromptTokens).toBe(0);
  });

  it('preflight: a new user message over the threshold (estimate) compacts before the turn', async () => {
    const t = await tenant({ protect_last_n: 2, protect_first_n: 1 });
    const conv = randomUUID();
    const big = (role: 'user' | 'assistant', tag: string): ChatMessage => ({
      role,
      content: `${tag} ${'word '.repeat(16_000)}`,
    });
    // Five messages (more than protect_first_n + protect_last_n + 1 = 4), estimated at ~100,000 tokens.
    await stack.client.submit(
      t,
      conv,
      batch([big('user', 'a'), big('assistant', 'b'), big('user', 'c'), big('assistant', 'd'), big('user', 'e')]),
      CTX100K,
    );
    const status = await stack.client.settled(t, conv);
    expect(status.compressionCount).toBe(1);
    expect(status.lastCompaction?.trigger).toBe('preflight');
    expect(status.lastCompaction?.stats?.tokensBefore).toBeGreaterThanOrEqual(75_000);
    expect(status.contextTokens).toBeLessThan(status.lastCompaction!.stats!.tokensBefore);
  });
});

describe('gateway hygiene (SPEC §11)', () => {
  // History estimated at ~90,000 tokens (≥ 85 % of 100,000) with no real reading.
  const huge = (i: number): ChatMessage => ({ role: 'assistant', content: `part ${i} ${'x'.repeat(119_990)}` });

  async function grow(t: string, conv: string, count: number): Promise<void> {
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'sys' }]), CTX100K);
    await stack.client.submit(t, conv, batch(Array.from({ length: count - 1 }, (_, i) => huge(i))), CTX100K);
  }

  it('runs before the turn at ≥ 85 % with ≥ 4 messages, and the incoming message is appended after it', async () => {
    const t = await tenant({ protect_first_n: 1, protect_last_n: 1 });
    const conv = randomUUID();
    await grow(t, conv, 4);
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'what next?' }]), CTX100K);
    const status = await stack.client.settled(t, conv);
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => r.trigger)).toEqual(['hygiene']);
    expect(records[0]!.status).toBe('committed');
    expect(records[0]!.in_place).toBe(true);
    expect(status.activeMessages).toBeLessThan(5);
    expect(status.lastCompaction?.trigger).toBe('hygiene');
  });

  it('does not run with 3 messages', async () => {
    const t = await tenant({ protect_first_n: 1, protect_last_n: 1 });
    const conv = randomUUID();
    await grow(t, conv, 3);
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'what next?' }]), CTX100K);
    await stack.client.settled(t, conv);
    const triggers = (await compactionsOf(testDb.db, t)).map((r) => r.trigger);
    expect(triggers).not.toContain('hygiene');
  });

  it('does not run when compression is disabled for the tenant', async () => {
    const t = await tenant({ protect_first_n: 1, protect_last_n: 1, enabled: false });
    const conv = randomUUID();
    await grow(t, conv, 6);
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'what next?' }]), CTX100K);
    const status = await stack.client.settled(t, conv);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
    expect(status.activeMessages).toBe(7);
  });
});

describe('anti-thrash guard (SPEC §7.4)', () => {
  it('two ineffective compactions stop automatic ones until the recovery probe', async () => {
    const t = await tenant({ protect_last_n: 4 });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CTX100K);
    // Every reading stays over the threshold (75,000) even right after a compaction, and under the hygiene
    // trigger (85,000), so only the in-loop check acts. Each reading comes after the previous batch was decided on,
    // as a real client's does (its model call used the context as it was then).
    for (let i = 0; i < 4; i++) {
      await stack.client.submit(t, conv, batch(round(10 + i), { prompt_tokens: 80_000 }), CTX100K);
      await stack.client.settled(t, conv);
    }
    const status = await stack.client.settled(t, conv);
    // #1 at the first reading; #2 after strike 1; then strike 2 trips the guard and no third compaction runs.
    expect(status.compressionCount).toBe(2);
    expect(status.ineffectiveStrikes).toBe(2);
    expect(status.blockedBy).toBe('ineffective');
    expect(status.trippedUntil).not.toBeNull();
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => r.trigger)).toEqual(['post_response', 'post_response']);
    // Manual compaction still works while tripped (it is forced).
    const manual = await stack.client.compact(t, conv);
    expect(manual.status).toBe('committed');
  });
});

describe('at most one automatic compaction between two model calls (SPEC §7.6, issue #9 §4)', () => {
  const huge = (role: 'user' | 'assistant', i: number): ChatMessage => ({
    role,
    content: `part ${i} ${'x'.repeat(119_990)}`,
  });

  it('[assistant with usage, user] at ≥ 85 %: one compaction, and the reading is no verdict on it', async () => {
    const t = await tenant({ protect_first_n: 1, protect_last_n: 2 });
    const conv = randomUUID();
    // A history estimated at ~90,000 tokens (≥ 85 % of 100,000) without a user message: no check runs yet.
    const history = [
      { role: 'system', content: 'sys' } as ChatMessage,
      huge('assistant', 0),
      huge('assistant', 1),
      huge('assistant', 2),
    ];
    await stack.client.submit(t, conv, batch(history), CTX100K);
    await stack.client.settled(t, conv);
    expect(await compactionsOf(testDb.db, t)).toEqual([]);
    // The reply to the last user message reports a reading at 90 % (≥ hygiene's 85 %), and a new user message follows.
    await stack.client.submit(
      t,
      conv,
      batch(
        [
          { role: 'assistant', content: 'answer' },
          { role: 'user', content: 'next question' },
        ],
        { prompt_tokens: 90_000 },
      ),
      CTX100K,
    );
    const status = await stack.client.settled(t, conv);
    const records = await compactionsOf(testDb.db, t);
    expect(records).toHaveLength(1);
    expect(status.compressionCount).toBe(1);
    expect(status.ineffectiveStrikes).toBe(0);
    // The next real reading decides the verdict of that compaction.
    await stack.client.submit(
      t,
      conv,
      batch([{ role: 'assistant', content: 'ok' }], { prompt_tokens: 30_000 }),
      CTX100K,
    );
    const after = await stack.client.settled(t, conv);
    expect(after.ineffectiveStrikes).toBe(0);
    expect((await compactionsOf(testDb.db, t)).length).toBe(1);
  });

  it('a reading of a batch accepted before a compaction committed is neither its verdict nor a new trigger', async () => {
    const t = await tenant({ protect_last_n: 4 });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch(agentTranscript(8)), CTX100K);
    await stack.client.settled(t, conv);
    // Two readings over the threshold sent back to back: the second was accepted while the first one's compaction
    // ran, so its model call saw the old context.
    await stack.client.submit(t, conv, batch(round(20), { prompt_tokens: 80_000 }), CTX100K);
    await stack.client.submit(t, conv, batch(round(21), { prompt_tokens: 80_000 }), CTX100K);
    const status = await stack.client.settled(t, conv);
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((r) => r.trigger)).toEqual(['post_response']);
    expect(status.ineffectiveStrikes).toBe(0);
  });
});

describe('per-tenant policy', () => {
  const CTX1M = { model: 'acme-long', contextLength: 1_000_000 };

  it("changes that tenant's threshold and no other tenant's, also for a running conversation", async () => {
    const a = await tenant({ threshold: 0.6 });
    const b = await tenant();
    const convA = randomUUID();
    const convB = randomUUID();
    await stack.client.submit(a, convA, batch([{ role: 'user', content: 'hi' }]), CTX1M);
    await stack.client.submit(b, convB, batch([{ role: 'user', content: 'hi' }]), CTX1M);
    expect((await stack.client.settled(a, convA)).thresholdTokens).toBe(600_000);
    expect((await stack.client.settled(b, convB)).thresholdTokens).toBe(500_000);

    await setTenantPolicy(testDb.db, a, { threshold: 0.7, model_thresholds: { 'acme-long': 0.8 } });
    await stack.client.submit(a, convA, batch([{ role: 'assistant', content: 'hello' }]), CTX1M);
    await stack.client.submit(b, convB, batch([{ role: 'assistant', content: 'hello' }]), CTX1M);
    const afterA = await stack.client.settled(a, convA);
    expect(afterA.thresholdTokens).toBe(800_000);
    expect(afterA.policyVersion).toBe(2);
    expect((await stack.client.settled(b, convB)).thresholdTokens).toBe(500_000);
  });
});

describe('model switch (SPEC §4.6)', () => {
  it('re-resolves thresholds from the raw configuration and records the cache notice', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'hi' }]), {
      model: 'acme',
      contextLength: 128_000,
    });
    expect((await stack.client.settled(t, conv)).thresholdTokens).toBe(96_000);
    expect(
      (await stack.client.switchModel(t, conv, { model: 'acme-big', contextLength: 1_000_000 })).thresholdTokens,
    ).toBe(500_000);
    const status = await stack.client.switchModel(t, conv, { model: 'acme-mid', contextLength: 200_000 });
    expect(status.thresholdTokens).toBe(150_000);
    expect(status.notices.filter((n) => n.startsWith('Switching model or credentials mid-conversation'))).toHaveLength(
      2,
    );
  });

  it('refuses a model below 64,000 tokens and a -900k id without such a variant', async () => {
    const t = await tenant();
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'hi' }]), {
      model: 'acme',
      contextLength: 128_000,
    });
    await expect(stack.client.switchModel(t, conv, { model: 'tiny', contextLength: 32_000 })).rejects.toThrow();
    await expect(stack.client.switchModel(t, conv, { model: 'gpt-5.5-900k' })).rejects.toThrow();
    expect((await stack.client.settled(t, conv)).model).toBe('acme');
  });
});
