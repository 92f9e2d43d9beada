// Drop-in OpenAI Chat Completions (issue #12) with the real `openai` SDK pointed at the gateway, and the fake OpenAI
// server behind it: the stateless history is stored once, message by message; while nothing was compacted the
// provider gets the client's own request byte for byte; streamed replies (tool calls, usage asked or not) reach the
// client as OpenAI streams them and are stored; after a compaction the provider gets the compacted transcript; an
// edited history becomes a branch; refusals and provider errors answer in OpenAI's dialect.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { SYSTEM_NOTE } from '../../../engine/constants.js';
import type { ChatMessage } from '../../../engine/types.js';
import { derivedConversationIds } from '../../../workers/gateway/dropin/history.js';
import { rateLimited, reply, toolCallsReply } from '../../support/fakes/script.js';
import { capitalQuestion, openAIDropinForFile, ROUTED_CLAUDE, storedMessages } from './dropinFixtures.js';

const dropin = openAIDropinForFile();

type Message = OpenAI.Chat.ChatCompletionMessageParam;

describe('POST /v1/chat/completions', () => {
  it('stores each message once; never compacted, the provider gets the client’s request byte for byte', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const history: Message[] = capitalQuestion();
    dropin.openai.enqueue(reply('Paris.'));
    const first = await client.chat.completions.create({ model: 'gpt-test', messages: history, temperature: 0.2 });
    expect(first.choices[0]?.message.content).toBe('Paris.');
    const upstream1 = dropin.openai.chatRequests().at(-1);
    expect(upstream1?.raw).toBe(JSON.stringify({ model: 'gpt-test', messages: history, temperature: 0.2 }));

    // The next request carries the whole history, the reply as the SDK returned it included.
    history.push(first.choices[0]?.message as Message, { role: 'user', content: 'And of Italy?' });
    dropin.openai.enqueue(reply('Rome.'));
    const { data: second, response } = await client.chat.completions
      .create({ model: 'gpt-test', messages: history, temperature: 0.2 })
      .withResponse();
    expect(second.choices[0]?.message.content).toBe('Rome.');
    const upstream2 = dropin.openai.chatRequests().at(-1);
    expect(upstream2?.raw).toBe(JSON.stringify({ model: 'gpt-test', messages: history, temperature: 0.2 }));
    // Two consecutive requests share the earlier one's whole prefix of messages: the provider's cache holds.
    const raw1 = upstream1?.raw ?? '';
    const prefix = raw1.slice(0, raw1.lastIndexOf(']'));
    expect(prefix.length).toBeGreaterThan(100);
    expect(upstream2?.raw.startsWith(prefix)).toBe(true);

    const conversationId = response.headers.get('x-conversation-id') as string;
    expect(conversationId).toMatch(/^oa-/);
    const rows = await storedMessages(dropin.gw, key, conversationId);
    expect(rows.map((m) => [m.role, m.content])).toEqual([
      ['system', history[0]?.content],
      ['user', 'What is the capital of France?'],
      ['assistant', 'Paris.'],
      ['user', 'And of Italy?'],
      ['assistant', 'Rome.'],
    ]);
    const found = await dropin.gw.call('GET', '/v1/search?q=Italy', key);
    expect(found.json.results.map((r: any) => r.sessionId)).toHaveLength(1);
  });

  it('streams as OpenAI does, tool calls included; the reply is stored; usage only when asked', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key, { 'x-conversation-id': `conv-${randomUUID()}` });
    const history: Message[] = [{ role: 'user', content: 'Read notes.txt and tell me what it says.' }];
    dropin.openai.enqueue(toolCallsReply([{ id: 'call_1', name: 'read_file', input: { path: 'notes.txt' } }]));
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      {
        type: 'function',
        function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
      },
    ];
    const stream = await client.chat.completions.create({ model: 'gpt-test', messages: history, tools, stream: true });
    let args = '';
    let callId = '';
    let sawUsage = false;
    for await (const chunk of stream) {
      if (chunk.usage) sawUsage = true;
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        callId = call.id ?? callId;
        args += call.function?.arguments ?? '';
      }
    }
    expect(callId).toBe('call_1');
    expect(JSON.parse(args)).toEqual({ path: 'notes.txt' });
    // The client did not ask for usage: it got none, though the provider was asked for it (the store keeps it).
    expect(sawUsage).toBe(false);
    expect(dropin.openai.chatRequests().at(-1)?.body.stream_options).toEqual({ include_usage: true });

    history.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: args } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'The notes say: water the ficus on Tuesdays.' },
    );
    dropin.openai.enqueue(reply('It says to water the ficus on Tuesdays.'));
    const second = await client.chat.completions.create({
      model: 'gpt-test',
      messages: history,
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of second) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('It says to water the ficus on Tuesdays.');
    expect(usage?.prompt_tokens).toBeGreaterThan(0);

    const conversationId = (client as any)._options.defaultHeaders['x-conversation-id'] as string;
    const rows = await storedMessages(dropin.gw, key, conversationId);
    expect(rows.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows[1]?.tool_calls?.[0]).toMatchObject({ id: 'call_1', function: { name: 'read_file', arguments: args } });
    expect(rows[3]?.content).toBe(text);
    const status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    expect(status.json.lastPromptTokens).toBe(usage?.prompt_tokens);
  });

  it('after a compaction, the provider gets the compacted transcript with the new messages and today’s system prompt', async () => {
    const { key } = await dropin.gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    const conversationId = `conv-${randomUUID()}`;
    const client = dropin.sdk(key, { 'x-conversation-id': conversationId });
    // The client writes the day into its system prompt (and rewrites it on the day after, below).
    const system = (date: string): Message => ({ role: 'system', content: `You help with a garden.\nToday: ${date}` });
    const history: Message[] = [system('2026-12-06')];
    for (let i = 0; i < 4; i++) {
      const details = 'The leaves turn yellow at the edges and the soil stays dry for days. '.repeat(40);
      history.push({ role: 'user', content: `Question ${i} about plant ${i}? ${details}` });
      // The last reply's reading is over the in-loop threshold (75 % of the 256K window): a background compaction.
      const prompt = i === 3 ? 200_000 : 1_000 + i;
      dropin.openai.enqueue(
        reply(`Answer ${i}.`, { usage: { prompt_tokens: prompt, completion_tokens: 5, total_tokens: prompt + 5 } }),
      );
      const answer = await client.chat.completions.create({ model: 'gpt-test', messages: history });
      history.push(answer.choices[0]?.message as Message);
    }
    for (let i = 0; i < 100; i++) {
      const status = await dropin.gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
      if (status.json.compressionCount === 1 && !status.json.compacting) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    history.push({ role: 'user', content: 'What about plant 9?' });
    history[0] = system('2026-12-07');
    dropin.openai.enqueue(reply('Plant 9 likes shade.'));
    const after = await client.chat.completions.create({ model: 'gpt-test', messages: history });
    expect(after.choices[0]?.message.content).toBe('Plant 9 likes shade.');
    const sent = dropin.openai.chatRequests().at(-1)?.body.messages as Array<{ role: string; content: string }>;
    expect(JSON.stringify(sent)).toContain('Fix the failing tests of the project.');
    // The compacted transcript goes with the client's system prompt of today (SPEC §8.6.1's note after it); the
    // store keeps the first day's.
    expect(sent[0]).toEqual({ role: 'system', content: `${system('2026-12-07').content}\n\n${SYSTEM_NOTE}` });
    expect(sent.some((m) => String(m.content).startsWith('Question 0 about plant 0?'))).toBe(false);
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'What about plant 9?' });
    // Everything stays stored (archived rows included), each message once.
    const rows = await storedMessages(dropin.gw, key, conversationId);
    expect(rows.filter((m) => m.role === 'system').map((m) => m.content)).toEqual([
      system('2026-12-06').content,
      `${system('2026-12-06').content}\n\n${SYSTEM_NOTE}`,
    ]);
    expect(rows.filter((m) => String(m.content).startsWith('Question 0 about plant 0?'))).toHaveLength(1);
    expect(rows.filter((m) => m.content === 'What about plant 9?')).toHaveLength(1);
  });

  it('an edited earlier message starts a branch linked to the stored conversation, which stays as it was', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const history: Message[] = [{ role: 'user', content: `Plan a trip ${randomUUID()}` }];
    dropin.openai.enqueue(reply('Where to?'));
    const first = await client.chat.completions.create({ model: 'gpt-test', messages: history }).withResponse();
    const original = first.response.headers.get('x-conversation-id') as string;
    history.push(first.data.choices[0]?.message as Message, { role: 'user', content: 'Lisbon.' });
    dropin.openai.enqueue(reply('Lisbon it is.'));
    await client.chat.completions.create({ model: 'gpt-test', messages: history });

    // The client edits its second message (the reply) and asks again.
    const edited: Message[] = [
      history[0] as Message,
      { role: 'assistant', content: 'Which city?' },
      { role: 'user', content: 'Porto.' },
    ];
    dropin.openai.enqueue(reply('Porto it is.'));
    const branched = await client.chat.completions.create({ model: 'gpt-test', messages: edited }).withResponse();
    const branch = branched.response.headers.get('x-conversation-id') as string;
    expect(branch).not.toBe(original);
    expect((await storedMessages(dropin.gw, key, original)).map((m) => m.content)).toEqual([
      history[0]?.content,
      'Where to?',
      'Lisbon.',
      'Lisbon it is.',
    ]);
    expect((await storedMessages(dropin.gw, key, branch)).map((m) => m.content)).toEqual([
      history[0]?.content,
      'Which city?',
      'Porto.',
      'Porto it is.',
    ]);
    // The same edited history again finds the branch and extends it.
    edited.push(branched.data.choices[0]?.message as Message, { role: 'user', content: 'Two days.' });
    dropin.openai.enqueue(reply('Two days in Porto.'));
    const again = await client.chat.completions.create({ model: 'gpt-test', messages: edited }).withResponse();
    expect(again.response.headers.get('x-conversation-id')).toBe(branch);
    const lineage = await dropin.gw.testDb.db
      .selectFrom('sessions')
      .select(['conversation_id', 'parent_session_id'])
      .where('conversation_id', 'in', [original, branch])
      .execute();
    const parent = lineage.find((s) => s.conversation_id === branch)?.parent_session_id;
    expect(parent).toBeTruthy();
    expect(lineage.find((s) => s.conversation_id === original && s.parent_session_id === null)).toBeDefined();
  });

  it('a system prompt rewritten for another day continues the conversation; an id given before is kept', async () => {
    const { id: tenantId, key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    // An agent writes the day into its system prompt, and rewrites it when resumed the next day.
    const system = (date: string): Message => ({ role: 'system', content: `Be brief.\nCurrent date: ${date}` });
    const question: Message = { role: 'user', content: `Capital of France? ${randomUUID()}` };
    dropin.openai.enqueue(reply('Paris.'));
    const first = await client.chat.completions
      .create({ model: 'gpt-test', messages: [system('2026-12-06'), question] })
      .withResponse();
    const conversationId = first.response.headers.get('x-conversation-id') as string;
    const nextDay: Message[] = [
      system('2026-12-07'),
      question,
      first.data.choices[0]?.message as Message,
      { role: 'user', content: 'And of Italy?' },
    ];
    dropin.openai.enqueue(reply('Rome.'));
    const second = await client.chat.completions.create({ model: 'gpt-test', messages: nextDay }).withResponse();
    expect(second.response.headers.get('x-conversation-id')).toBe(conversationId);
    // The provider got the client's request as sent (the new date); the store kept each message once.
    expect(dropin.openai.chatRequests().at(-1)?.body.messages[0]).toEqual(system('2026-12-07'));
    expect((await storedMessages(dropin.gw, key, conversationId)).map((m) => m.content)).toEqual([
      system('2026-12-06').content,
      question.content,
      'Paris.',
      'And of Italy?',
      'Rome.',
    ]);

    // A conversation created before derived ids set dates aside (its id: the opening's digest with the date) is
    // found again under that id.
    const spain: Message[] = [system('2026-11-30'), { role: 'user', content: `Capital of Spain? ${randomUUID()}` }];
    const before = derivedConversationIds('oa', tenantId, spain as ChatMessage[]).dated as string;
    expect(before).not.toBe(derivedConversationIds('oa', tenantId, spain as ChatMessage[]).id);
    dropin.openai.enqueue(reply('Madrid.'));
    await dropin
      .sdk(key, { 'x-conversation-id': before })
      .chat.completions.create({ model: 'gpt-test', messages: spain });
    spain.push({ role: 'assistant', content: 'Madrid.' }, { role: 'user', content: 'And of Portugal?' });
    dropin.openai.enqueue(reply('Lisbon.'));
    const found = await client.chat.completions.create({ model: 'gpt-test', messages: spain }).withResponse();
    expect(found.response.headers.get('x-conversation-id')).toBe(before);
    expect(await storedMessages(dropin.gw, key, before)).toHaveLength(5);
    const conversations = await dropin.gw.testDb.db
      .selectFrom('conversations')
      .select('id')
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(conversations.map((c) => c.id).sort()).toEqual([before, conversationId].sort());
  });

  it('refuses in OpenAI’s dialect naming the field, stores nothing; passes provider errors on as they came', async () => {
    const { id, key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const noMessages = await client.chat.completions.create({ model: 'gpt-test', messages: [] }).catch((e) => e);
    expect(noMessages).toBeInstanceOf(OpenAI.BadRequestError);
    expect(noMessages.type).toBe('invalid_request_error');
    expect(noMessages.param).toBe('messages');
    const badRole = await client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'robot', content: 'hi' } as any] })
      .catch((e) => e);
    expect(badRole).toBeInstanceOf(OpenAI.BadRequestError);
    expect(badRole.param).toBe('messages[0].role');
    const wrongKey = await dropin
      .sdk('not-a-key')
      .chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(wrongKey.code).toBe('invalid_api_key');
    const rows = await dropin.gw.testDb.db.selectFrom('messages').select('id').where('tenant_id', '=', id).execute();
    expect(rows).toHaveLength(0);

    dropin.openai.enqueue(rateLimited({ 'retry-after': '7' }));
    const limited = await client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi there' }] })
      .catch((e) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.headers.get('retry-after')).toBe('7');
    expect(limited.code).toBe('rate_limit_exceeded');

    // The key as Anthropic's clients send it is accepted too.
    dropin.openai.enqueue(reply('hello'));
    const viaHeader = await fetch(`${dropin.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi via x-api-key' }] }),
    });
    expect(viaHeader.status).toBe(200);
  });

  it('to Claude over a caching route: two breakpoints of ours for a client that set none, a stable prefix', async () => {
    const { key } = await dropin.gw.tenant();
    const client = dropin.sdk(key);
    const history = capitalQuestion();
    dropin.openai.enqueue(reply('Paris.'), reply('Rome.'));
    const first = await client.chat.completions.create({ model: ROUTED_CLAUDE, messages: history });
    const raw1 = dropin.openai.chatRequests().at(-1)?.raw ?? '';
    expect(raw1.split('"cache_control"').length - 1).toBe(2);
    const sent1 = JSON.parse(raw1);
    expect(sent1.messages[0].content).toEqual([
      { type: 'text', text: history[0]?.content, cache_control: { type: 'ephemeral' } },
    ]);
    history.push(first.choices[0]?.message as Message, { role: 'user', content: 'And of Italy?' });
    const { response } = await client.chat.completions
      .create({ model: ROUTED_CLAUDE, messages: history })
      .withResponse();
    const conversationId = response.headers.get('x-conversation-id') as string;
    const raw2 = dropin.openai.chatRequests().at(-1)?.raw ?? '';
    expect(raw2.split('"cache_control"').length - 1).toBe(2);
    // The earlier request's bytes up to its last breakpoint are the next one's: the provider's cache entry holds.
    const breakpoint = raw1.lastIndexOf(',"cache_control"');
    expect(breakpoint).toBeGreaterThan(raw1.indexOf('What is the capital of France?'));
    expect(raw2.slice(0, breakpoint)).toBe(raw1.slice(0, breakpoint));

    // A client with breakpoints of its own gets exactly its request.
    const own: Message[] = [
      {
        role: 'system',
        content: [
          { type: 'text', text: `Own markers. ${randomUUID()}`, cache_control: { type: 'ephemeral' } } as never,
        ],
      },
      { role: 'user', content: 'Hello?' },
    ];
    dropin.openai.enqueue(reply('Hi.'));
    await client.chat.completions.create({ model: ROUTED_CLAUDE, messages: own });
    expect(dropin.openai.chatRequests().at(-1)?.raw).toBe(JSON.stringify({ model: ROUTED_CLAUDE, messages: own }));
    // The store keeps what the client sent: its strings, no marker.
    const stored = await storedMessages(dropin.gw, key, conversationId);
    expect(stored.map((m) => m.content)).toEqual([
      history[0]?.content,
      'What is the capital of France?',
      'Paris.',
      'And of Italy?',
      'Rome.',
    ]);
  });
});
