// A drop-in reply is handed to the client while its commit runs (issue #12 bench: the answer does not wait for it).
// What comes after it must not see the store without it or out of order: the next request of the conversation and
// the tenant's reads wait for the commit in the same gateway; on another gateway the next request may come first,
// and then the late reply is not stored after it (the next request's copy of it is the one kept).
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

/** Holds the gateway's reply commits (the appends that must follow a message) until `open()`. */
function holdReplyCommits(conversations: Conversations) {
  const original = conversations.submitDecided;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let held = 0;
  conversations.submitDecided = async function (this: Conversations, ...args: Parameters<typeof original>) {
    if (args[4]?.after !== undefined) {
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
});
