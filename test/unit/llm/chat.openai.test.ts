// chatCompletion through the real `openai` SDK against the fake chat-completions server.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { cacheOption, chatCompletion } from '../../../infra/llm/chat.js';
import type { OpenAIProviderClient } from '../../../infra/llm/clients.js';
import { toOpenAIMessage } from '../../../infra/llm/openaiMessages.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { refusalReply, reply, toolCallsReply, truncatedReply } from '../../support/fakes/script.js';
import { clientFor, markerCount, plainThenStreamed, recordingFetch, TEST_KEY } from './helpers.js';

let fake: OpenAIFake;
beforeAll(async () => {
  fake = await startOpenAIFake({ expectedApiKey: TEST_KEY });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'List the files' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
  },
  { role: 'tool', content: 'a.ts b.ts', tool_call_id: 'c1', name: 'ls' },
  { role: 'assistant', content: 'Two files.' },
  { role: 'user', content: 'Thanks. And the tests?' },
];

function lastBody() {
  return fake.chatRequests().at(-1)?.body;
}

describe('chatCompletion — OpenAI kind', () => {
  it('sends the wire fields only, with the key, and returns the reply with exact usage', async () => {
    fake.enqueue(
      reply('No tests yet.', {
        usage: {
          prompt_tokens: 2_345,
          completion_tokens: 12,
          total_tokens: 2_357,
          prompt_tokens_details: { cached_tokens: 2_048 },
        },
      }),
    );
    const extra = conversation.map((m, i) => ({ ...m, row_id: i })) as ChatMessage[];
    const result = await chatCompletion({
      provider: clientFor('openai', 'openai', fake.baseURL),
      model: 'gpt-5.5',
      messages: extra,
      cache: { ttl: '5m' },
    });
    expect(result.message).toEqual({ role: 'assistant', content: 'No tests yet.' });
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({
      prompt_tokens: 2_345,
      completion_tokens: 12,
      total_tokens: 2_357,
      cache_read_tokens: 2_048,
      cache_write_tokens: 0,
      uncached_input_tokens: 297,
    });
    const request = fake.chatRequests()[0];
    expect(request?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(request?.body).toEqual({
      model: 'gpt-5.5',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'List the files' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
        },
        { role: 'tool', content: 'a.ts b.ts', tool_call_id: 'c1' },
        { role: 'assistant', content: 'Two files.' },
        { role: 'user', content: 'Thanks. And the tests?' },
      ],
    });
  });

  it('returns tool calls, sends tools and the output limit (max_completion_tokens on api.openai.com)', async () => {
    fake.enqueue(toolCallsReply([{ id: 'call_9', name: 'run_tests', input: { filter: 'app' } }]));
    const tools = [{ type: 'function' as const, function: { name: 'run_tests', parameters: { type: 'object' } } }];
    const result = await chatCompletion({
      provider: clientFor('openai', 'openai', fake.baseURL),
      model: 'gpt-5.5',
      messages: conversation,
      tools,
      maxTokens: 500,
      cache: null,
    });
    expect(result.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'run_tests', arguments: '{"filter":"app"}' } }],
    });
    expect(result.finishReason).toBe('tool_calls');
    expect(lastBody().tools).toEqual(tools);
    expect(lastBody().max_completion_tokens).toBe(500);
  });

  it('uses max_tokens on OpenAI-compatible servers and sends the configured extra headers', async () => {
    fake.enqueue(reply('ok'));
    await chatCompletion({
      provider: clientFor('local', 'openai', fake.baseURL, { extra: { headers: { 'X-Title': 'durable-context' } } }),
      model: 'llama3',
      messages: conversation,
      maxTokens: 300,
      cache: null,
    });
    expect(lastBody().max_tokens).toBe(300);
    expect(lastBody().max_completion_tokens).toBeUndefined();
    expect(fake.chatRequests().at(-1)?.headers['x-title']).toBe('durable-context');
  });

  it('strips the -900k alias suffix before sending (SPEC §4.3)', async () => {
    fake.enqueue(reply('ok'));
    const result = await chatCompletion({
      provider: clientFor('openai-codex', 'openai', fake.baseURL),
      model: 'gpt-5.4-900k',
      messages: conversation,
      cache: null,
    });
    expect(lastBody().model).toBe('gpt-5.4');
    expect(result.model).toBe('gpt-5.4');
  });

  it('reports refusals and truncation without failing (the caller judges them)', async () => {
    fake.enqueue(refusalReply(), truncatedReply());
    const provider = clientFor('openai', 'openai', fake.baseURL);
    const refused = await chatCompletion({ provider, model: 'gpt-5.5', messages: conversation, cache: null });
    expect(refused.refusal).toBe("I'm sorry, I can't help with that.");
    expect(refused.message.content).toBe('');
    const truncated = await chatCompletion({ provider, model: 'gpt-5.5', messages: conversation, cache: null });
    expect(truncated.finishReason).toBe('length');
  });

  it('reads OpenRouter cache writes and reads', async () => {
    fake.enqueue(
      reply('ok', {
        usage: {
          prompt_tokens: 10_000,
          completion_tokens: 5,
          total_tokens: 10_005,
          prompt_tokens_details: { cached_tokens: 6_000, cache_write_tokens: 3_000 },
        },
      }),
    );
    const result = await chatCompletion({
      provider: clientFor('openrouter', 'openai', fake.baseURL),
      model: 'anthropic/claude-sonnet-4.5',
      messages: conversation,
      cache: { ttl: '5m' },
    });
    expect(result.usage).toEqual({
      prompt_tokens: 10_000,
      completion_tokens: 5,
      total_tokens: 10_005,
      cache_read_tokens: 6_000,
      cache_write_tokens: 3_000,
      uncached_input_tokens: 1_000,
    });
  });

  describe('the body: the bytes openaiMessages.ts puts together, what the SDK would have serialised', () => {
    /** The client of `provider` with every request's body (as handed to fetch) recorded. */
    function recording(provider: OpenAIProviderClient) {
      const bodies: unknown[] = [];
      const openai = provider.openai.withOptions({ fetch: recordingFetch(bodies) });
      return { provider: { ...provider, openai }, bodies };
    }

    const tools = [{ type: 'function' as const, function: { name: 'ls', parameters: { type: 'object' } } }];

    // keepJson: the bytes put together from each message's kept JSON, for both calls; without it the plain call's
    // body is serialised whole and the streamed one is left to the SDK's stream helper.
    it.each([
      [true, [true, true]],
      [false, [true, false]],
    ])(
      'keepJson %s: non-streaming and streamed, the same request (bytes handed to fetch: %j)',
      async (keepJson, asBytes) => {
        const { provider, bodies } = recording(clientFor('openai', 'openai', fake.baseURL) as OpenAIProviderClient);
        const call = (onText?: (delta: string) => void) =>
          chatCompletion({
            provider,
            model: 'gpt-5.5',
            messages: conversation,
            cache: null,
            tools,
            maxTokens: 64,
            keepJson,
            ...(onText ? { onText } : {}),
          });
        await plainThenStreamed(fake, call);

        const wire = conversation.map(toOpenAIMessage);
        const fields = { model: 'gpt-5.5', messages: wire, tools, max_completion_tokens: 64 };
        const streamed = { ...fields, stream: true, stream_options: { include_usage: true } };
        expect(bodies.map((body) => Buffer.isBuffer(body))).toEqual(asBytes);
        expect(bodies.map((body) => String(body))).toEqual([JSON.stringify(fields), JSON.stringify(streamed)]);
        const [plain, asStream] = fake.chatRequests();
        expect(plain?.headers['content-type']).toBe('application/json');
        expect(plain?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
        expect(asStream?.body).toEqual(streamed);
      },
    );
  });

  describe('cache markers on the wire (SPEC §12)', () => {
    async function send(id: string, model: string, cache: { ttl: '5m' | '1h' } | null, messages = conversation) {
      fake.enqueue(reply('ok'));
      const result = await chatCompletion({ provider: clientFor(id, 'openai', fake.baseURL), model, messages, cache });
      return { result, body: lastBody() };
    }

    it('Claude via OpenRouter: system + last 3 eligible messages, tool rows skipped (not native)', async () => {
      const { result, body } = await send('openrouter', 'anthropic/claude-sonnet-4.5', { ttl: '1h' });
      expect(result.cachingEnabled).toBe(true);
      expect(markerCount(body)).toBe(4);
      const ttl = { type: 'ephemeral', ttl: '1h' };
      expect(body.messages[0].content).toEqual([{ type: 'text', text: 'You are terse.', cache_control: ttl }]);
      expect(body.messages[2].cache_control).toEqual(ttl);
      expect(body.messages[3].cache_control).toBeUndefined();
      expect(body.messages[4].content).toEqual([{ type: 'text', text: 'Two files.', cache_control: ttl }]);
      expect(body.messages[5].content[0].cache_control).toEqual(ttl);
      expect(body.messages[1]).toEqual({ role: 'user', content: 'List the files' });
    });

    it('5m TTL: markers without ttl', async () => {
      const { body } = await send('openrouter', 'anthropic/claude-haiku-4.5', { ttl: '5m' });
      expect(body.messages[0].content[0].cache_control).toEqual({ type: 'ephemeral' });
    });

    it('none for a non-Claude model, for a provider that is not OpenRouter, and with caching off', async () => {
      expect(markerCount((await send('openrouter', 'openai/gpt-5.5', { ttl: '1h' })).body)).toBe(0);
      expect(markerCount((await send('openai', 'claude-sonnet-4-5', { ttl: '1h' })).body)).toBe(0);
      const off = await send('openrouter', 'anthropic/claude-sonnet-4.5', null);
      expect(off.result.cachingEnabled).toBe(false);
      expect(markerCount(off.body)).toBe(0);
    });

    it('cacheOption reads prompt_caching.cache_ttl (falsy → off)', () => {
      expect(cacheOption(parseConfigText('').promptCaching)).toEqual({ ttl: '5m' });
      expect(cacheOption(parseConfigText('prompt_caching:\n  cache_ttl: 1h').promptCaching)).toEqual({ ttl: '1h' });
      for (const off of ['null', 'false', '""']) {
        expect(cacheOption(parseConfigText(`prompt_caching:\n  cache_ttl: ${off}`).promptCaching)).toBeNull();
      }
    });

    it('removes stale markers when caching is off', async () => {
      const stale: ChatMessage[] = [
        { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
      ];
      const { body } = await send('openai', 'gpt-5.5', null, stale);
      expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    });
  });
});
