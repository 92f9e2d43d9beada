// A drop-in reply is handed to the client while its commit runs (issue #12 bench: the answer does not wait for it).
// What comes after it must not see the store without it or out of order: the next request of the conversation and
// the tenant's reads wait for the commit in the same gateway; on another gateway the next request may come first,
// and then the late reply is not stored after it (the next request's copy of it is the one kept). The same rule
// keeps two concurrent requests of different histories apart: the one whose messages come second is matched again
// and continues in a branch.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { normalizeCompressionConfig } from '../../../engine/index.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { buildGateway } from '../../../workers/gateway/app.js';
import { Conversations } from '../../../workers/gateway/conversations.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { reply } from '../../support/fakes/script.js';
import { capitalQuestion, openAIDropinForFile, storedMessages } from './dropinFixtures.js';

const dropin = openAIDropinForFile();

type Message = OpenAI.Chat.ChatCompletionMessageParam;

type Submit = Conversations['submitDecided'];

/** Holds the gateway's commits that `which` picks until `open()`; by default its reply commits (appends that must
 * follow a message and hold an assistant's). */
function holdReplyCommits(
  conversations: Conversations,
  which: (...args: Parameters<Submit>) => boolean = (_t, _c, batch, _s, options) =>
    options?.after !== undefined && batch.messages.some((m) => m.message.role === 'assistant'),
) {
  const original = conversations.submitDecided;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let held = 0;
  conversations.submitDecided = async function (this: Conversations, ...args: Parameters<Submit>) {
    if (which(...args)) {
      held += 1;
      await gate;
    }
    return original.apply(this, args);
  };
  return {
    held: () => held,
    open,
    restore: () => {
      conversations.submitDecided = original;
    },
  };
}

const settledWithin = async (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

describe('a drop-in reply committed after the answer', () => {
  it('is waited for by the next request and by reads of the tenant, in the same gateway', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const history: Message[] = capitalQuestion();
    const hold = holdReplyCommits(dropin.gw.stack.client);
    try {
      dropin.openai.enqueue(reply('Paris.'), reply('Rome.'));
      const { data: first, response } = await client.chat.completions
        .create({ model: 'gpt-test', messages: history })
        .withResponse();
      // Answered while its reply's commit is still held.
      expect(first.choices[0]?.message.content).toBe('Paris.');
      expect(hold.held()).toBe(1);
      const conversationId = response.headers.get('x-conversation-id') as string;
      const upstreamBefore = dropin.openai.chatRequests().length;

      history.push(first.choices[0]?.message as Message, { role: 'user', content: 'And of Italy?' });
      const read = storedMessages(dropin.gw, key, conversationId);
      const second = client.chat.completions.create({ model: 'gpt-test', messages: history });
      expect(await settledWithin(read, 300)).toBe(false);
      // Another conversation's route does not wait for this one's commit.
      const elsewhere = dropin.gw.call('GET', `/v1/conversations/other-${randomUUID()}/messages`, key);
      expect(await settledWithin(elsewhere, 300)).toBe(true);
      expect((await elsewhere).status).toBe(404);
      expect(await settledWithin(second, 10)).toBe(false);
      expect(dropin.openai.chatRequests().length).toBe(upstreamBefore);

      hold.open();
      expect((await second).choices[0]?.message.content).toBe('Rome.');
      expect((await read).slice(0, 3).map((m) => m.content)).toEqual([
        history[0]?.content,
        'What is the capital of France?',
        'Paris.',
      ]);
      await dropin.gw.stack.client.pendingWrites.drain();
      const rows = await storedMessages(dropin.gw, key, conversationId);
      expect(rows.map((m) => [m.role, m.content])).toEqual([
        ['system', history[0]?.content],
        ['user', 'What is the capital of France?'],
        ['assistant', 'Paris.'],
        ['user', 'And of Italy?'],
        ['assistant', 'Rome.'],
      ]);
    } finally {
      hold.open();
      hold.restore();
    }
  });

  it('is not stored after a next request another gateway took first', async () => {
    const { gw, openai } = dropin;
    const { key } = await gw.tenant();
    const { llm, keys } = fakeOpenAIProvider(openai);
    const other = new Conversations(gw.testDb.db, gw.stack.temporal, { baseConfig: normalizeCompressionConfig({}) });
    const otherApp = await buildGateway({
      db: gw.testDb.db,
      conversations: other,
      metrics: createMetrics({ defaultMetrics: false }),
      adminKey: `admin-${randomUUID()}`,
      cacheTtl: '5m',
      providers: llm.providers ?? null,
      env: keys,
      defaultModel: { model: 'gpt-test', provider: 'openai', contextLength: null },
    });
    const otherUrl = await otherApp.listen({ port: 0, host: '127.0.0.1' });
    const hold = holdReplyCommits(gw.stack.client);
    try {
      const history: Message[] = capitalQuestion();
      openai.enqueue(reply('Paris.'), reply('Rome.'));
      const { data: first, response } = await dropin
        .sdk(key)
        .chat.completions.create({ model: 'gpt-test', messages: history })
        .withResponse();
      expect(hold.held()).toBe(1);
      const conversationId = response.headers.get('x-conversation-id') as string;
      // The client keeps its own copy of the reply (here: reworded) and its next request reaches the other gateway.
      expect(first.choices[0]?.message.content).toBe('Paris.');
      history.push({ role: 'assistant', content: 'Paris, France.' }, { role: 'user', content: 'And of Italy?' });
      const elsewhere = new OpenAI({ baseURL: `${otherUrl}/v1`, apiKey: key, maxRetries: 0 });
      const second = await elsewhere.chat.completions.create({ model: 'gpt-test', messages: history });
      expect(second.choices[0]?.message.content).toBe('Rome.');
      await other.pendingWrites.drain();

      hold.open();
      await gw.stack.client.pendingWrites.drain();
      const rows = await storedMessages(gw, key, conversationId);
      expect(rows.map((m) => [m.role, m.content])).toEqual([
        ['system', history[0]?.content],
        ['user', 'What is the capital of France?'],
        ['assistant', 'Paris, France.'],
        ['user', 'And of Italy?'],
        ['assistant', 'Rome.'],
      ]);
    } finally {
      hold.open();
      hold.restore();
      await otherApp.close();
    }
  });

  it('two concurrent requests of different histories: the one whose messages come second continues in a branch', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const opening = capitalQuestion();
    dropin.openai.enqueue(reply('Paris.'));
    const { data: first, response } = await client.chat.completions
      .create({ model: 'gpt-test', messages: opening })
      .withResponse();
    const conversationId = response.headers.get('x-conversation-id') as string;
    const shared = [...opening, first.choices[0]?.message as Message];
    // B's new message is held on its way to the store; A's overtakes it.
    const hold = holdReplyCommits(dropin.gw.stack.client, (_t, _c, batch) =>
      batch.messages.some((m) => m.message.content === 'Option B: and of Spain?'),
    );
    try {
      dropin.openai.enqueue(reply('Rome.'), reply('Madrid.'));
      const b = client.chat.completions
        .create({ model: 'gpt-test', messages: [...shared, { role: 'user', content: 'Option B: and of Spain?' }] })
        .withResponse();
      for (let i = 0; i < 100 && hold.held() === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(hold.held()).toBe(1);
      const a = await client.chat.completions.create({
        model: 'gpt-test',
        messages: [...shared, { role: 'user', content: 'Option A: and of Italy?' }],
      });
      expect(a.choices[0]?.message.content).toBe('Rome.');
      await dropin.gw.stack.client.pendingWrites.drain();
      hold.open();
      const { data: bAnswer, response: bResponse } = await b;
      expect(bAnswer.choices[0]?.message.content).toBe('Madrid.');
      await dropin.gw.stack.client.pendingWrites.drain();

      // The stored conversation holds one history; B's continues in a branch linked to it.
      const main = await storedMessages(dropin.gw, key, conversationId);
      expect(main.map((m) => m.content)).toEqual([
        opening[0]?.content,
        'What is the capital of France?',
        'Paris.',
        'Option A: and of Italy?',
        'Rome.',
      ]);
      const branchId = bResponse.headers.get('x-conversation-id') as string;
      expect(branchId).not.toBe(conversationId);
      const branch = await storedMessages(dropin.gw, key, branchId);
      expect(branch.map((m) => m.content).slice(-2)).toEqual(['Option B: and of Spain?', 'Madrid.']);
    } finally {
      hold.open();
      hold.restore();
    }
  });
});
