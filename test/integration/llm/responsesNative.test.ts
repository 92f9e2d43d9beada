// OpenAI Responses native compaction in chat backend mode (issue #13 §1, SPEC §15.1) on the real services, the real
// `openai` SDK talking to the fake Responses server: the field with its threshold on the eligible route only, the
// checkpoint kept beside the reply (never in its content, its estimate or search) and replayed first, the rejection
// turning the feature off for the session with one retry, switching, and no false local trigger after a checkpoint
// — the same readings without a checkpoint do compact locally.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import type { ChatMessage, Summarizer } from '../../../engine/index.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { selectWithState } from '../../../infra/db/messages.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { settledHistory } from '../../support/harness/activityRuns.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { createTestStack, type TestStack } from '../../support/harness/temporal.js';
import { activeTranscript, agentTranscript, batch, compactionsOf, keyed, newTenant } from '../workflows/transcript.js';

let testDb: TestDatabase;
let stack: TestStack;
let openai: OpenAIFake;
const KEYS = { FAKE_CODEX_TOKEN: 'codex-token', FAKE_OPENAI_KEY: 'sk-openai' };
const summarizer: Summarizer = async () => '## Goal\nKeep going.\n## Progress\n### Done\n- earlier rounds';

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
  openai = await startOpenAIFake();
  const yaml = [
    'model: { default: gpt-5.6, provider: openai-codex }',
    'providers:',
    `  openai-codex: { base_url: "${openai.baseURL}", api_key_env: FAKE_CODEX_TOKEN, models: [gpt-5.6] }`,
    // The same server as `openai` at a custom base URL: a route the field must never go to (SPEC §15.1 gate 4).
    `  openai: { base_url: "${openai.baseURL}", api_key_env: FAKE_OPENAI_KEY, api: responses, models: [gpt-5.6-luna] }`,
  ].join('\n');
  const llm = llmDepsFromConfig(parseConfigText(yaml), KEYS, () => undefined);
  stack = await createTestStack({ db: testDb.db, activityDeps: llm, summarizer });
});
afterAll(async () => {
  await stack?.close();
  await openai?.close();
  await testDb?.drop();
});
beforeEach(() => {
  openai.requests.length = 0;
});

// 100,000-token window: threshold 75,000 (small-context floor), so T = min(200,000, 75,000 − 8,000) = 67,000.
const CODEX = { model: 'gpt-5.6', provider: 'openai-codex', contextLength: 100_000 };
const T = 67_000;
const NATIVE = { codex_responses_native: true, protect_last_n: 2 };
/** Just under the 75,000 trigger: with the reply and the next ~2,000-token user message, over it. */
const NEAR = { input_tokens: 74_500, output_tokens: 40 };
const LONG_QUESTION = `Now refactor the module. ${'Keep every public name stable. '.repeat(250)}`;

const sent = (i: number) => openai.responsesRequests()[i]?.body as Record<string, any>;

async function conversation(policy: Record<string, unknown>, start = CODEX): Promise<{ t: string; conv: string }> {
  const t = await newTenant(testDb.db, policy);
  const conv = randomUUID();
  await stack.client.submit(t, conv, batch(agentTranscript(4)), start);
  await stack.client.settled(t, conv);
  return { t, conv };
}

async function turn(t: string, conv: string, content: string) {
  return stack.client.chatTurn(t, conv, { messages: keyed([{ role: 'user', content } as ChatMessage]) });
}

async function sessionDisabled(t: string, sessionId: string): Promise<boolean> {
  return withTenant(testDb.db, t, async (tx) => {
    const row = await tx
      .selectFrom('sessions')
      .select('responses_native_disabled')
      .where('id', '=', sessionId)
      .executeTakeFirst();
    return row?.responses_native_disabled === true;
  });
}

/** The estimate of the session's system rows and of its rows from the one with `from` as content on (null: all). */
async function sentEstimate(t: string, sessionId: string, from: string | null): Promise<number> {
  const rows = await withTenant(testDb.db, t, (tx) =>
    selectWithState(tx, t)
      .select(['m.role', 'm.content', 'm.token_estimate', 's.position'])
      .where('s.session_id', '=', sessionId)
      .where('s.active', '=', true)
      .orderBy('s.position')
      .execute(),
  );
  const start = from === null ? 0 : rows.findIndex((r) => r.content === from);
  return rows.reduce((sum, r, i) => sum + (r.role === 'system' || i >= start ? r.token_estimate : 0), 0);
}

async function until(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('native compaction on the openai-codex route', () => {
  it('sends the threshold; the checkpoint is kept beside the reply and replayed first; no local compaction', async () => {
    // SPEC §19 `background: false`: every turn is the workflow's own (the gateway runs none).
    const { t, conv } = await conversation({ ...NATIVE, background: false });
    openai.enqueue(reply('First answer.', { compaction: 'gAAAA-checkpoint-1', usage: NEAR }));
    const first = await turn(t, conv, 'Summarise the files.');
    expect(first.reply.content).toBe('First answer.');
    expect(sent(0)).toMatchObject({ model: 'gpt-5.6', store: false });
    expect(sent(0)).not.toHaveProperty('previous_response_id');
    expect(sent(0).context_management).toEqual([{ type: 'compaction', compact_threshold: T }]);
    expect(first.status.nativeCompactThreshold).toBe(T);

    openai.enqueue(reply('Refactored.', { usage: { input_tokens: 3_100, output_tokens: 20 } }));
    const second = await turn(t, conv, LONG_QUESTION);
    const input: Array<Record<string, any>> = sent(1).input;
    // The checkpoint stands in for everything before it: item, the reply it came with, then the new question.
    expect(input[0]).toEqual(expect.objectContaining({ type: 'compaction', encrypted_content: 'gAAAA-checkpoint-1' }));
    expect(input.slice(1).map((item) => item.type)).toEqual(['message', 'message']);
    expect(input[1]?.content[0].text).toBe('First answer.');
    expect(input[2]?.content[0].text).toBe(LONG_QUESTION);
    expect(sent(1).instructions).toBeDefined();

    // No false local trigger: the 74,500 reading measured the input before the server compacted it. The
    // checkpoint has a record of its own (no rows changed), where the cache economics after it are measured.
    const status = await stack.client.settled(t, conv);
    expect(second.status.lastPromptTokens).toBe(3_100);
    expect(status.contextTokens).toBeLessThan(10_000);
    expect(status.cache.watching).toMatchObject({ compactionId: expect.stringMatching(/^native:/) });
    openai.enqueue(
      reply('Done.', {
        usage: { input_tokens: 3_300, output_tokens: 5, input_tokens_details: { cached_tokens: 3_000 } },
      }),
    );
    await turn(t, conv, 'Anything else?');
    const records = await compactionsOf(testDb.db, t);
    expect(records.map((c) => [c.trigger, c.status, c.in_place])).toEqual([['responses_native', 'committed', true]]);
    // The first request after it wrote nothing to the cache (the fake reports none), reads recovered on the next.
    expect(records[0]).toMatchObject({ cache_rewrite_tokens: 0, cache_recovery_turns: 2 });

    // Kept with the turn record, never in the message: not in its content, its estimate, or search.
    const rows = await activeTranscript(testDb.db, t, status.sessionId);
    const answer = rows.find((r) => r.content === 'First answer.');
    expect(answer).toBeDefined();
    expect(JSON.stringify(rows)).not.toContain('gAAAA');
    const turns = await withTenant(testDb.db, t, (tx) =>
      tx.selectFrom('turns').select(['message_id', 'replay']).orderBy('created_at').execute(),
    );
    expect(turns.map((r) => r.replay?.items.map((item) => item.encrypted_content) ?? null)).toEqual([
      ['gAAAA-checkpoint-1'],
      null,
      null,
    ]);
    expect(turns[0]?.replay?.origin).toMatchObject({ provider: 'openai-codex', baseUrl: openai.baseURL });
    expect(turns[0]?.replay?.origin.account).not.toContain('codex-token');
  });

  it('a checkpoint from a turn the gateway ran itself: notified, the same accounting, replayed', async () => {
    const { t, conv } = await conversation(NATIVE);
    openai.enqueue(reply('Plain.', { usage: { input_tokens: 2_000, output_tokens: 10 } }));
    await turn(t, conv, 'One?');
    const handle = stack.temporal.client.workflow.getHandle(conversationWorkflowId(t, conv));
    /** The batches notified to the workflow, as their content-free payloads. */
    const signalled = async () =>
      ((await settledHistory(handle)).events ?? [])
        .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'batchStored')
        .map((e) => {
          const payload = e.workflowExecutionSignaledEventAttributes?.input?.payloads?.[0];
          return JSON.parse(Buffer.from(payload?.data ?? []).toString()) as Record<string, unknown>;
        });
    const before = (await signalled()).length;
    openai.enqueue(reply('Checkpointed here.', { compaction: 'gAAAA-gateway', usage: NEAR }));
    const second = await turn(t, conv, 'Two?');
    expect(second.reply.content).toBe('Checkpointed here.');
    expect(sent(1).context_management).toEqual([{ type: 'compaction', compact_threshold: T }]);
    // The gateway ran the turn (its reply batch was signalled: the workflow's own turns store theirs) and its
    // checkpoint was never quiet: the workflow heard of it, without the reading, never with the item.
    const status = await stack.client.settled(t, conv);
    const notified = (await signalled()).slice(before);
    expect(notified.map((b) => [b.nativeCheckpoint ?? false, 'usage' in b])).toEqual([[true, false]]);
    expect(JSON.stringify(notified)).not.toContain('gAAAA');
    expect(status.lastPromptTokens).toBe(0);
    // Until the next reading: what is sent besides the item — the system prompt and the reply, nothing before.
    expect(status.contextTokens).toBe(await sentEstimate(t, status.sessionId, 'Checkpointed here.'));
    openai.enqueue(reply('Third.', { usage: { input_tokens: 2_900, output_tokens: 10 } }));
    await turn(t, conv, LONG_QUESTION);
    expect(sent(2).input[0]).toEqual(expect.objectContaining({ encrypted_content: 'gAAAA-gateway' }));
    await stack.client.settled(t, conv);
    expect((await compactionsOf(testDb.db, t)).map((c) => c.trigger)).toEqual(['responses_native']);
  });

  it('a message stored while the model answered is sent after the checkpoint, never lost', async () => {
    const { t, conv } = await conversation(NATIVE);
    openai.enqueue(reply('Slow answer.', { compaction: 'gAAAA-slow', usage: NEAR, delayMs: 1_500 }));
    const answering = turn(t, conv, 'Think hard.');
    await until(() => openai.responsesRequests().length === 1);
    // The request is out: this message is not in it, yet it is stored before the reply.
    await stack.client.submit(t, conv, batch([{ role: 'user', content: 'Also check the docs.' }]));
    await answering;
    openai.enqueue(reply('Both done.'));
    await turn(t, conv, 'Go on.');
    const input: Array<Record<string, any>> = sent(1).input;
    expect(input[0]).toEqual(expect.objectContaining({ encrypted_content: 'gAAAA-slow' }));
    // Everything stored after the checkpointed request's last row, in stored order, the late message included.
    const status = await stack.client.status(t, conv);
    const rows = await activeTranscript(testDb.db, t, status.sessionId);
    const contents = rows.map((r) => r.content);
    const after = contents.slice(contents.indexOf('Think hard.') + 1, contents.indexOf('Go on.') + 1);
    expect(after).toContain('Also check the docs.');
    expect(input.slice(1).map((item) => item.content?.[0]?.text)).toEqual(after);
  });

  it('the same readings without a checkpoint (opted out): no field, the whole transcript, a local compaction', async () => {
    const { t, conv } = await conversation({ protect_last_n: 2 });
    openai.enqueue(reply('First answer.', { usage: NEAR }));
    const first = await turn(t, conv, 'Summarise the files.');
    expect(sent(0)).not.toHaveProperty('context_management');
    expect(first.status.nativeCompactThreshold).toBeNull();
    openai.enqueue(reply('Refactored.', { usage: { input_tokens: 3_100, output_tokens: 20 } }));
    await turn(t, conv, LONG_QUESTION);
    await stack.client.settled(t, conv);
    expect((await compactionsOf(testDb.db, t)).map((c) => c.trigger)).toEqual(['preflight']);
  });

  it('a rejection naming context_management: retried once without it, then off for the session', async () => {
    const { t, conv } = await conversation(NATIVE);
    openai.enqueue(
      {
        kind: 'error',
        status: 400,
        param: 'context_management',
        message: "Unsupported parameter: 'context_management'.",
      },
      reply('Answered anyway.'),
    );
    const first = await turn(t, conv, 'Hello?');
    expect(first.reply.content).toBe('Answered anyway.');
    expect(openai.responsesRequests()).toHaveLength(2);
    expect(sent(0)).toHaveProperty('context_management');
    expect(sent(1)).not.toHaveProperty('context_management');
    expect(await sessionDisabled(t, first.status.sessionId)).toBe(true);
    openai.enqueue(reply('Second.'));
    await turn(t, conv, 'Again?');
    expect(openai.responsesRequests()).toHaveLength(3);
    expect(sent(2)).not.toHaveProperty('context_management');
  });
});

describe('the gate and switching (SPEC §15.1)', () => {
  it('never to another route or an ineligible model; a checkpoint never goes to another route', async () => {
    // `openai` at a custom base URL (not api.openai.com): the field is never sent, even for gpt-5.6-luna.
    const custom = await conversation(NATIVE, { model: 'gpt-5.6-luna', provider: 'openai', contextLength: 100_000 });
    openai.enqueue(reply('Custom route.'));
    await turn(custom.t, custom.conv, 'Hi');
    expect(sent(0)).not.toHaveProperty('context_management');
    // gpt-5.5 on the Codex route: not the gpt-5.6 family.
    const older = await conversation(NATIVE, { ...CODEX, model: 'gpt-5.5' });
    openai.enqueue(reply('Older model.'));
    await turn(older.t, older.conv, 'Hi');
    expect(sent(1)).not.toHaveProperty('context_management');

    // A checkpoint issued by openai-codex, then a switch to `openai`: the whole transcript goes, no compaction item.
    const { t, conv } = await conversation(NATIVE);
    openai.enqueue(reply('Checkpointed.', { compaction: 'gAAAA-codex-only' }));
    await turn(t, conv, 'First');
    const switched = await stack.client.switchModel(t, conv, { model: 'gpt-5.6-luna', provider: 'openai' });
    // The new route gets the whole transcript: the checkpointed reading no longer measures it.
    expect(switched.lastPromptTokens).toBe(0);
    expect(switched.contextTokens).toBe(await sentEstimate(t, switched.sessionId, null));
    openai.enqueue(reply('Switched.'));
    await turn(t, conv, 'Second');
    const after: Array<Record<string, any>> = sent(3).input;
    expect(JSON.stringify(after)).not.toContain('gAAAA-codex-only');
    expect(after.filter((item) => item.type === 'function_call').length).toBeGreaterThan(0);
    expect(sent(3)).not.toHaveProperty('context_management');
    // And back: the checkpoint is the Codex route's own again.
    await stack.client.switchModel(t, conv, { model: 'gpt-5.6', provider: 'openai-codex' });
    openai.enqueue(reply('Back.'));
    await turn(t, conv, 'Third');
    expect(sent(4).input[0]).toEqual(expect.objectContaining({ encrypted_content: 'gAAAA-codex-only' }));
  });
});
