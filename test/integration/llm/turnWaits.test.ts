// A chat turn right after a notified reply (issue #11 §2): the workflow's rules are stale until it has worked that
// notification off. The turn could run in the gateway at once, judged by what was notified since the rules, but its
// own batches would then be notified too, leaving the next turn's rules stale again — back-to-back turns would keep
// notifying. It waits (bounded, TurnWaits.judgedMs; lengthened here so the test does not race the workflow) for
// the next rules instead, and its batches are quiet. Rules voided without a batch (a background compaction's
// settlement opens a new epoch before the workflow republishes) are waited for the same way (TurnWaits.unknownMs).
// The rules are judged as the turn's append locks the row (the turn reads nothing before it). Real services, the
// real `openai` client and the fake server.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { respondDepsFrom } from '../../../activities/respond.js';
import { createTurnRunner } from '../../../activities/turnRunner.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { getConversation, recordApplied } from '../../../infra/db/conversations.js';
import { openNotification } from '../../../infra/db/quietBatches.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import { getTenantPolicy, setTenantPolicy } from '../../../infra/db/tenants.js';
import { createMetrics, type Metrics } from '../../../infra/metrics/registry.js';
import { ChatTurns, type TurnHost } from '../../../workers/gateway/chatTurns.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { allRows, batch, keyed, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
const metrics = createMetrics({ defaultMetrics: false });
let openai: OpenAIFake;
let llm: ReturnType<typeof llmDepsFromConfig>;
const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  const configYaml = [
    'model: { default: gpt-test, provider: openai }',
    'providers:',
    `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
  ].join('\n');
  llm = llmDepsFromConfig(parseConfigText(configYaml), { FAKE_OPENAI_KEY: 'sk-openai' }, () => undefined);
  stack = await createTestStack({
    db: testDb.db,
    activityDeps: llm,
    conversations: { turnWaits: { judgedMs: 10_000, unknownMs: 10_000 }, turnMetrics: metrics },
  });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});

/** A metric's values by label values (a histogram's count as `<labels>:count`). */
const countedIn = async (registry: Metrics, name: string) => {
  const values = (await registry.registry.getSingleMetric(name)?.get())?.values ?? [];
  return Object.fromEntries(
    values.map((v) => {
      const count = (v as { metricName?: string }).metricName?.endsWith('_count') === true;
      return [`${Object.values(v.labels).join(',')}${count ? ':count' : ''}`, v.value];
    }),
  );
};
const counted = (name: string) => countedIn(metrics, name);

const usage = (prompt: number) => ({
  usage: { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 },
});

describe('a chat turn after a notified reply', () => {
  it("waits for the workflow's next rules and runs quiet instead of notifying again", async () => {
    // Automatic compaction off: a reading over the threshold is still notified (it may be a verdict), and decides
    // nothing else.
    const t = await newTenant(testDb.db, { enabled: false });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are terse.' }]), GPT);
    openai.enqueue(reply('first'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'one?' }], 'w1') });
    const handle = stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv));
    const signalled = async () => {
      const events = (await settledHistory(handle)).events ?? [];
      return events
        .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'batchStored')
        .map((e) => {
          const payload = e.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0];
          const body = JSON.parse(Buffer.from(payload?.data ?? []).toString()) as {
            turnFollows?: boolean;
            turn?: { prompt_tokens: number };
          };
          return body.turnFollows ? 'user batch' : `reply ${body.turn?.prompt_tokens ?? '-'}`;
        });
    };
    await stack.client.settled(t, conv);
    const before = await signalled();

    openai.enqueue(reply('over', usage(190_000)), reply('after', usage(2_000)), reply('and after', usage(2_100)));
    for (const [i, content] of ['two?', 'three?', 'four?'].entries()) {
      await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content }], `w${i + 2}`) });
    }
    // Only the reading over the threshold was notified; the turns after it waited for the rules and were quiet.
    expect((await signalled()).slice(before.length)).toEqual(['reply 190000']);
    // /metrics says where the turns ran and that one waited for the rules (the first turn, before any rules were
    // published, was the workflow's).
    expect(await counted('dctx_chat_turns_total')).toEqual({ workflow: 1, gateway_notified: 1, gateway_quiet: 2 });
    // A retried turn is answered from what its first attempt stored, and counted as such.
    const again = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'four?' }], 'w4') });
    expect(again.reply.content).toBe('and after');
    expect((await counted('dctx_chat_turns_total')).stored).toBe(1);
    expect((await counted('dctx_chat_turn_rules_wait_seconds'))['judged:count']).toBe(1);
    // Every answered turn is timed under where it ran.
    expect(await counted('dctx_chat_turn_seconds')).toMatchObject({
      'workflow:count': 1,
      'gateway_notified:count': 1,
      'gateway_quiet:count': 2,
      'stored:count': 1,
    });
    const status = await stack.client.status(t, conv);
    expect(status.appliedSeq).toBe(status.batchSeq);
    expect(status.lastPromptTokens).toBe(2_100);
    expect(status.cache.turns).toBe(4);
  });

  /** A conversation whose first turn the workflow ran and whose rules are published and current. */
  async function conversationWithRules() {
    const t = await newTenant(testDb.db, { enabled: false });
    const conv = randomUUID();
    await stack.client.submit(t, conv, batch([{ role: 'system', content: 'You are terse.' }]), GPT);
    openai.enqueue(reply('first'));
    await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'one?' }], 'v1') });
    await stack.client.settled(t, conv);
    const row = (await getConversation(testDb.db, t, conv)) as ConversationRow;
    expect(row.quiet_rules?.gatewayTurns).toBe(true);
    expect(row.quiet_rules?.epoch).toBe(row.notify_epoch);
    return { t, conv, row };
  }

  /** As the workflow publishing after it opened a notification: the rules for the conversation's latest epoch. */
  async function republish(t: string, conv: string) {
    const row = (await getConversation(testDb.db, t, conv)) as ConversationRow;
    const rules = row.quiet_rules as NonNullable<ConversationRow['quiet_rules']>;
    await recordApplied(testDb.db, t, conv, {
      appliedSeq: row.batch_seq,
      state: row.state as object,
      quietRules: { ...rules, epoch: row.notify_epoch },
    });
  }

  /**
   * As the workflow settling a background compaction, once it has opened its notification (rules void, nothing to
   * apply): its publication of the rules for the new epoch, `ms` from now. `done` settles once published.
   */
  function republishIn(t: string, conv: string, ms: number) {
    const state = { published: false };
    const done = new Promise((resolve) => setTimeout(resolve, ms)).then(async () => {
      await republish(t, conv);
      state.published = true;
    });
    return { state, done };
  }

  it('waits for rules voided without a batch to be published again, and runs quiet', async () => {
    const { t, conv } = await conversationWithRules();
    const turnsBefore = await counted('dctx_chat_turns_total');
    const waitsBefore = (await counted('dctx_chat_turn_rules_wait_seconds'))['unknown:count'] ?? 0;
    // Every batch is applied already: only the rules' epoch says the workflow is still deciding.
    await openNotification(testDb.db, t, conv);
    const republished = republishIn(t, conv, 300);
    openai.enqueue(reply('quiet after the settlement'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'v2') });
    expect(republished.state.published).toBe(true);
    await republished.done;
    expect(turn.reply.content).toBe('quiet after the settlement');
    const turns = await counted('dctx_chat_turns_total');
    expect((turns.gateway_quiet ?? 0) - (turnsBefore.gateway_quiet ?? 0)).toBe(1);
    expect(turns.workflow).toBe(turnsBefore.workflow);
    expect((await counted('dctx_chat_turn_rules_wait_seconds'))['unknown:count']).toBe(waitsBefore + 1);
    // Both of the turn's batches were quiet: applied at commit.
    const status = await stack.client.status(t, conv);
    expect(status.appliedSeq).toBe(status.batchSeq);
  });

  it('judges the rules under the append’s lock: rolls a turn back whose rules are not current, waits, runs quiet once', async () => {
    const { t, conv } = await conversationWithRules();
    // The turn reads nothing before its append: every read the host's read pool serves is recorded.
    const reads: string[] = [];
    const readDb = new Proxy(stack.client.readDb, {
      get(target, property) {
        reads.push(String(property));
        const value = Reflect.get(target, property);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const host = Object.create(stack.client, { readDb: { value: readDb } }) as TurnHost;
    const own = createMetrics({ defaultMetrics: false });
    const turns = new ChatTurns(host, createTurnRunner({ ...respondDepsFrom(llm), db: testDb.db }), {
      waits: { judgedMs: 10_000, unknownMs: 10_000 },
      metrics: own,
    });
    openai.enqueue(reply('quiet, nothing read'));
    const quiet = await turns.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'v2') });
    expect(quiet.reply.content).toBe('quiet, nothing read');
    expect(reads).toEqual([]);

    // A settlement voids the rules between turns: the next turn's append finds them not current under its lock.
    await openNotification(testDb.db, t, conv);
    const republished = republishIn(t, conv, 300);
    openai.enqueue(reply('quiet after the settlement'));
    const turn = await turns.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'three?' }], 'v3') });
    expect(republished.state.published).toBe(true);
    await republished.done;
    expect(turn.reply.content).toBe('quiet after the settlement');
    expect(reads.length).toBeGreaterThan(0); // the wait reads the row
    expect(await countedIn(own, 'dctx_chat_turns_total')).toEqual({ gateway_quiet: 2 });
    expect((await countedIn(own, 'dctx_chat_turn_rules_wait_seconds'))['unknown:count']).toBe(1);
    // The rolled-back append left nothing behind: each question and reply once, in order.
    const rows = await allRows(testDb.db, t);
    expect(rows.map((r) => r.content)).toEqual([
      'You are terse.',
      'one?',
      'first',
      'two?',
      'quiet, nothing read',
      'three?',
      'quiet after the settlement',
    ]);
    const status = await stack.client.status(t, conv);
    expect(status.appliedSeq).toBe(status.batchSeq);
  });

  it('does not wait for rules a compression-policy change voided: the workflow takes the turn and the policy over', async () => {
    const { t, conv } = await conversationWithRules();
    const turnsBefore = await counted('dctx_chat_turns_total');
    const waitsBefore = await counted('dctx_chat_turn_rules_wait_seconds');
    await setTenantPolicy(testDb.db, t, { enabled: false, threshold: 0.6 });
    // The rules are void and nothing publishes until the workflow hears of something: with this stack's 10 s
    // bound a wait would outlast the test's timeout.
    openai.enqueue(reply('after the policy change'));
    const turn = await stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content: 'two?' }], 'v2') });
    expect(turn.reply.content).toBe('after the policy change');
    const turns = await counted('dctx_chat_turns_total');
    expect(turns.workflow).toBe((turnsBefore.workflow ?? 0) + 1);
    expect(await counted('dctx_chat_turn_rules_wait_seconds')).toEqual(waitsBefore);
    // The workflow took the new policy over with the turn and published its rules for the latest epoch.
    const row = (await getConversation(testDb.db, t, conv)) as ConversationRow;
    expect(row.state?.policyVersion).toBe((await getTenantPolicy(testDb.db, t))?.version);
    expect(row.quiet_rules?.epoch).toBe(row.notify_epoch);
  }, 8_000);
});
