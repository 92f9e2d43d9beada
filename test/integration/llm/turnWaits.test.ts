// A chat turn right after a notified reply (issue #11 §2): the workflow's rules are stale until it has worked that
// notification off. The turn could run in the gateway at once, judged by what was notified since the rules, but its
// own batches would then be notified too, leaving the next turn's rules stale again — back-to-back turns would keep
// notifying. It waits (bounded, TurnWaits.judgedMs; lengthened here so the test does not race the workflow) for
// the next rules instead, and its batches are quiet. Real services, the real `openai` client and the fake server.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { batch, keyed, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
const metrics = createMetrics({ defaultMetrics: false });
let openai: OpenAIFake;
const GPT = { model: 'gpt-test', provider: 'openai', contextLength: 200_000 };

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  const configYaml = [
    'model: { default: gpt-test, provider: openai }',
    'providers:',
    `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
  ].join('\n');
  const llm = llmDepsFromConfig(parseConfigText(configYaml), { FAKE_OPENAI_KEY: 'sk-openai' }, () => undefined);
  stack = await createTestStack({
    db: testDb.db,
    activityDeps: llm,
    conversations: { turnWaits: { judgedMs: 10_000 }, turnMetrics: metrics },
  });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});

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
    /** A metric's values by label values (a histogram's count as `<labels>:count`). */
    const counted = async (name: string) => {
      const values = (await metrics.registry.getSingleMetric(name)?.get())?.values ?? [];
      return Object.fromEntries(
        values.map((v) => {
          const count = (v as { metricName?: string }).metricName?.endsWith('_count') === true;
          return [`${Object.values(v.labels).join(',')}${count ? ':count' : ''}`, v.value];
        }),
      );
    };
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
});
