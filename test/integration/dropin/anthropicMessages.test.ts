// Drop-in Anthropic Messages (issue #12) with the real `@anthropic-ai/sdk` pointed at the gateway (key as
// `x-api-key`, as the SDK sends it), and the fake Anthropic server behind it: the history (system, content blocks,
// tool_use / tool_result) is stored once, message by message; while nothing was compacted the provider gets the
// client's own request byte for byte (its cache breakpoints and thinking blocks included); streamed replies reach the
// client as Anthropic streams them and are stored; after a compaction the provider gets the compacted transcript and
// no thinking block; count_tokens; refusals and provider errors in Anthropic's dialect.
import { randomUUID } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnthropicFake } from '../../support/fakes/anthropicFake.js';
import { rateLimited, reply, toolCallsReply } from '../../support/fakes/script.js';
import type { GatewayHarness } from '../../support/harness/gateway.js';
import { DROPIN_CLAUDE, startAnthropicDropin, storedMessages } from './dropinFixtures.js';

const MODEL = DROPIN_CLAUDE;
let anthropic: AnthropicFake;
let gw: GatewayHarness;

beforeAll(async () => {
  ({ anthropic, gw } = await startAnthropicDropin());
});
afterAll(async () => {
  await gw?.close();
  await anthropic?.close();
});

/** The official SDK as a user configures it: base URL = the gateway, key = the tenant's key. */
const sdk = (key: string, headers: Record<string, string> = {}) =>
  new Anthropic({ baseURL: gw.url, apiKey: key, maxRetries: 0, defaultHeaders: headers });

describe('POST /v1/messages', () => {
  it('stores each message once; never compacted, the provider gets the client’s request byte for byte', async () => {
    const { key } = await gw.tenant();
    const client = sdk(key);
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: `You are terse. ${randomUUID()}`, cache_control: { type: 'ephemeral' } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the capital of France?' }];
    anthropic.enqueue(reply('Paris.'));
    const first = await client.messages.create({ model: MODEL, max_tokens: 256, system, messages });
    expect(first.content[0]).toMatchObject({ type: 'text', text: 'Paris.' });
    const raw1 = anthropic.messageRequests().at(-1)?.raw ?? '';
    expect(raw1).toBe(JSON.stringify({ model: MODEL, max_tokens: 256, system, messages }));

    messages.push({ role: 'assistant', content: first.content as Anthropic.ContentBlockParam[] });
    messages.push({
      role: 'user',
      content: [{ type: 'text', text: 'And of Italy?', cache_control: { type: 'ephemeral' } }],
    });
    anthropic.enqueue(reply('Rome.'));
    const { data: second, response } = await client.messages
      .create({ model: MODEL, max_tokens: 256, system, messages }, { headers: { 'anthropic-beta': 'test-beta-1' } })
      .withResponse();
    expect(second.content[0]).toMatchObject({ text: 'Rome.' });
    const upstream2 = anthropic.messageRequests().at(-1);
    expect(upstream2?.raw).toBe(JSON.stringify({ model: MODEL, max_tokens: 256, system, messages }));
    // The client's cache breakpoints as it set them; the prefix up to the first request's last one is unchanged.
    const breakpoint = raw1.lastIndexOf('cache_control');
    expect(breakpoint).toBeGreaterThan(0);
    expect(upstream2?.raw.slice(0, breakpoint)).toBe(raw1.slice(0, breakpoint));
    expect(upstream2?.headers['anthropic-beta']).toBe('test-beta-1');

    const conversationId = response.headers.get('x-conversation-id') as string;
    expect(conversationId).toMatch(/^an-/);
    expect(
      (await storedMessages(gw, key, conversationId)).map((m) => [
        m.role,
        typeof m.content === 'string' ? m.content : m.content?.[0]?.text,
      ]),
    ).toEqual([
      ['system', system[0]?.text],
      ['user', 'What is the capital of France?'],
      ['assistant', 'Paris.'],
      ['user', 'And of Italy?'],
      ['assistant', 'Rome.'],
    ]);
  });

  it('adds its own breakpoints only for a client that set none: system and last message, a stable prefix', async () => {
    const { key } = await gw.tenant();
    const client = sdk(key);
    const system = `You answer in one word. ${randomUUID()}`;
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Capital of Spain?' }];
    anthropic.enqueue(reply('Madrid.'));
    await client.messages.create({ model: MODEL, max_tokens: 64, system, messages });
    const raw1 = anthropic.messageRequests().at(-1)?.raw ?? '';
    messages.push({ role: 'assistant', content: 'Madrid.' }, { role: 'user', content: 'And of Portugal?' });
    anthropic.enqueue(reply('Lisbon.'));
    const { response } = await client.messages
      .create({ model: MODEL, max_tokens: 64, system, messages })
      .withResponse();
    const raw2 = anthropic.messageRequests().at(-1)?.raw ?? '';
    const body2 = JSON.parse(raw2);
    // Two of Anthropic's four: the system prompt and the last block of the last message (SPEC §12.2 TTL: 5m default).
    expect(raw1.split('"cache_control"').length - 1).toBe(2);
    expect(raw2.split('"cache_control"').length - 1).toBe(2);
    expect(body2.system).toEqual([{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }]);
    expect(body2.messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'And of Portugal?', cache_control: { type: 'ephemeral' } }],
    });
    // The two consecutive upstream requests share their bytes up to the earlier request's last breakpoint.
    const breakpoint = raw1.lastIndexOf(',"cache_control"');
    expect(breakpoint).toBeGreaterThan(raw1.indexOf('Capital of Spain?'));
    expect(raw2.slice(0, breakpoint)).toBe(raw1.slice(0, breakpoint));
    // What is stored is what the client sent: no marker, its own content form.
    const stored = await storedMessages(gw, key, response.headers.get('x-conversation-id') as string);
    expect(stored.map((m) => m.content)).toEqual([
      system,
      'Capital of Spain?',
      'Madrid.',
      'And of Portugal?',
      'Lisbon.',
    ]);
    expect(JSON.stringify(stored)).not.toContain('cache_control');
  });

  it('streams as Anthropic does, tool use included; the reply and the tool result are stored', async () => {
    const { key } = await gw.tenant();
    const conversationId = `an-${randomUUID()}`;
    const client = sdk(key, { 'x-conversation-id': conversationId });
    const tools: Anthropic.Tool[] = [
      { name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
    ];
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Read notes.txt please.' }];
    anthropic.enqueue(toolCallsReply([{ id: 'toolu_1', name: 'read_file', input: { path: 'notes.txt' } }]));
    const stream = client.messages.stream({ model: MODEL, max_tokens: 256, messages, tools });
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type));
    const final = await stream.finalMessage();
    expect(final.content).toEqual([
      expect.objectContaining({ type: 'tool_use', id: 'toolu_1', input: { path: 'notes.txt' } }),
    ]);
    expect(types).toEqual(expect.arrayContaining(['message_start', 'content_block_delta', 'message_stop']));

    messages.push({ role: 'assistant', content: final.content as Anthropic.ContentBlockParam[] });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Water the ficus on Tuesdays.' }],
    });
    anthropic.enqueue(reply('It says: water the ficus on Tuesdays.'));
    const answer = await client.messages.stream({ model: MODEL, max_tokens: 256, messages, tools }).finalText();
    expect(answer).toBe('It says: water the ficus on Tuesdays.');

    const rows = await storedMessages(gw, key, conversationId);
    expect(rows.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(rows[1]?.tool_calls?.[0]).toMatchObject({ id: 'toolu_1', function: { name: 'read_file' } });
    expect(JSON.parse(rows[1]?.tool_calls?.[0]?.function.arguments)).toEqual({ path: 'notes.txt' });
    expect(rows[2]).toMatchObject({ role: 'tool', tool_call_id: 'toolu_1', content: 'Water the ficus on Tuesdays.' });
    const status = await gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
    expect(status.json.lastPromptTokens).toBeGreaterThan(0);
  });

  it('after a compaction: the compacted transcript, no thinking block, the drop said in a header', async () => {
    const { key } = await gw.tenant({ protect_first_n: 1, protect_last_n: 2 });
    const conversationId = `an-${randomUUID()}`;
    const client = sdk(key, { 'x-conversation-id': conversationId });
    const messages: Anthropic.MessageParam[] = [];
    for (let i = 0; i < 4; i++) {
      const details = 'The leaves turn yellow at the edges and the soil stays dry for days. '.repeat(40);
      messages.push({ role: 'user', content: `Question ${i} about plant ${i}? ${details}` });
      // The last reply's reading is over the in-loop threshold (75 % of the 256K window): a background compaction.
      const input = i === 3 ? 200_000 : 1_000 + i;
      anthropic.enqueue(reply(`Answer ${i}.`, { usage: { input_tokens: input, output_tokens: 5 } }));
      const answer = await client.messages.create({
        model: MODEL,
        max_tokens: 256,
        system: 'Garden helper.',
        messages,
      });
      messages.push({
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: `thought ${i}`, signature: `sig-${i}` },
          ...(answer.content as Anthropic.ContentBlockParam[]),
        ],
      });
    }
    for (let i = 0; i < 100; i++) {
      const status = await gw.call('GET', `/v1/conversations/${conversationId}/status`, key);
      if (status.json.compressionCount === 1 && !status.json.compacting) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    messages.push({ role: 'user', content: 'What about plant 9?' });
    anthropic.enqueue(reply('Plant 9 likes shade.'));
    const { data, response } = await client.messages
      .create({ model: MODEL, max_tokens: 256, system: 'Garden helper.', messages })
      .withResponse();
    expect(data.content[0]).toMatchObject({ text: 'Plant 9 likes shade.' });
    const sent = anthropic.messageRequests().at(-1)?.body;
    expect(JSON.stringify(sent.system)).toContain('Garden helper.');
    expect(JSON.stringify(sent.messages)).toContain('Fix the failing tests of the project.');
    expect(JSON.stringify(sent.messages)).not.toContain('Question 0 about plant 0?');
    expect(JSON.stringify(sent.messages)).not.toContain('"thinking"');
    expect(sent.messages.at(-1)).toMatchObject({ role: 'user' });
    expect(JSON.stringify(sent.messages.at(-1))).toContain('What about plant 9?');
    expect(Number(response.headers.get('x-thinking-blocks-dropped'))).toBe(4);
  });

  it('count_tokens goes to the provider and stores nothing; refusals and provider errors in Anthropic’s dialect', async () => {
    const { id, key } = await gw.tenant();
    const client = sdk(key);
    const counted = await client.messages.countTokens({
      model: MODEL,
      messages: [{ role: 'user', content: 'How many tokens is this?' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);

    const noMessages = await client.messages.create({ model: MODEL, max_tokens: 10, messages: [] }).catch((e) => e);
    expect(noMessages).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noMessages.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(noMessages.error.error.message).toMatch(/messages/);
    // A turn of a role Anthropic has none of is refused, naming it (a system turn is one: claudeCode.test.ts).
    const badRole = await client.messages
      .create({ model: MODEL, max_tokens: 10, messages: [{ role: 'developer', content: 'x' }] as never })
      .catch((e) => e);
    expect(badRole).toBeInstanceOf(Anthropic.BadRequestError);
    expect(badRole.error.error.message).toMatch(/messages\[0\]\.role/);
    const wrongKey = await sdk('nope')
      .messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(wrongKey).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(wrongKey.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    const rows = await gw.testDb.db.selectFrom('messages').select('id').where('tenant_id', '=', id).execute();
    expect(rows).toHaveLength(0);

    anthropic.enqueue(rateLimited({ 'retry-after': '9' }));
    const limited = await client.messages
      .create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi there' }] })
      .catch((e) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.headers.get('retry-after')).toBe('9');
    expect(limited.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });
});
