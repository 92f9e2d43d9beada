// chatCompletion through the real `@anthropic-ai/sdk` against the fake Messages server.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { applyAnthropicCacheControl } from '../../../engine/cacheControl.js';
import type { ChatMessage } from '../../../engine/types.js';
import { toAnthropicRequest } from '../../../infra/llm/anthropicMessages.js';
import { chatCompletion, DEFAULT_ANTHROPIC_MAX_TOKENS } from '../../../infra/llm/chat.js';
import type { AnthropicProviderClient } from '../../../infra/llm/clients.js';
import { fromAnthropicRequest } from '../../../infra/llm/fromAnthropic.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { refusalReply, reply, toolCallsReply, truncatedReply } from '../../support/fakes/script.js';
import { clientFor, markerCount, plainThenStreamed, recordingFetch, TEST_KEY } from './helpers.js';

let fake: AnthropicFake;
beforeAll(async () => {
  fake = await startAnthropicFake({ expectedApiKey: TEST_KEY });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
});

const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Read both files' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'toolu_1', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
      { id: 'toolu_2', type: 'function', function: { name: 'read', arguments: '{"path":"b.ts"}' } },
    ],
  },
  { role: 'tool', content: 'A', tool_call_id: 'toolu_1', name: 'read' },
  { role: 'tool', content: 'B', tool_call_id: 'toolu_2', name: 'read' },
  { role: 'assistant', content: 'Both read.' },
  { role: 'user', content: 'Summarise them' },
];

function lastBody() {
  return fake.messageRequests().at(-1)?.body;
}

function anthropic() {
  return clientFor('anthropic', 'anthropic', fake.baseURL);
}

describe('chatCompletion — Anthropic kind', () => {
  it('sends system, merged tool results, max_tokens and the key; returns reply and summed usage', async () => {
    fake.enqueue(
      reply('A and B.', {
        usage: {
          input_tokens: 120,
          output_tokens: 7,
          cache_creation_input_tokens: 3_000,
          cache_read_input_tokens: 9_000,
        },
      }),
    );
    const result = await chatCompletion({
      provider: anthropic(),
      model: 'claude-sonnet-5-5',
      messages: conversation,
      cache: null,
    });
    expect(result.message).toEqual({ role: 'assistant', content: 'A and B.' });
    expect(result.finishReason).toBe('stop');
    expect(result.rawFinishReason).toBe('end_turn');
    expect(result.usage).toEqual({
      prompt_tokens: 12_120,
      completion_tokens: 7,
      total_tokens: 12_127,
      cache_read_tokens: 9_000,
      cache_write_tokens: 3_000,
      uncached_input_tokens: 120,
    });
    const request = fake.messageRequests()[0];
    expect(request?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(request?.headers['anthropic-version']).toBeTruthy();
    expect(request?.body.max_tokens).toBe(DEFAULT_ANTHROPIC_MAX_TOKENS);
    expect(request?.body.system).toBe('You are terse.');
    expect(request?.body.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'A' },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: 'B' },
      ],
    });
    // What went on the wire converts back to the conversation (tool names restored from their calls).
    expect(fromAnthropicRequest(request?.body)).toEqual(conversation);
  });

  it('returns tool_use as tool_calls and sends tools in Anthropic shape', async () => {
    fake.enqueue(toolCallsReply([{ id: 'toolu_9', name: 'grep', input: { q: 'TODO' } }], 'Searching.'));
    const result = await chatCompletion({
      provider: anthropic(),
      model: 'claude-sonnet-5-5',
      messages: conversation,
      tools: [{ type: 'function', function: { name: 'grep', description: 'search', parameters: { type: 'object' } } }],
      maxTokens: 1_000,
      cache: null,
    });
    expect(result.message).toEqual({
      role: 'assistant',
      content: 'Searching.',
      tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'grep', arguments: '{"q":"TODO"}' } }],
    });
    expect(result.finishReason).toBe('tool_calls');
    expect(lastBody().tools).toEqual([{ name: 'grep', description: 'search', input_schema: { type: 'object' } }]);
    expect(lastBody().max_tokens).toBe(1_000);
  });

  it('maps refusal and max_tokens stop reasons', async () => {
    fake.enqueue(refusalReply(), truncatedReply());
    const refused = await chatCompletion({
      provider: anthropic(),
      model: 'claude-x',
      messages: conversation,
      cache: null,
    });
    expect(refused.finishReason).toBe('refusal');
    const truncated = await chatCompletion({
      provider: anthropic(),
      model: 'claude-x',
      messages: conversation,
      cache: null,
    });
    expect(truncated.finishReason).toBe('length');
    expect(truncated.rawFinishReason).toBe('max_tokens');
  });

  // keepJson: the bytes put together from each message's kept JSON; without it the body serialised whole.
  it.each([true, false])(
    'keepJson %s: bytes, streamed or not, what the SDK would have serialised',
    async (keepJson) => {
      const provider = anthropic() as AnthropicProviderClient;
      const bodies: unknown[] = [];
      const recording = provider.anthropic.withOptions({ fetch: recordingFetch(bodies) });
      const call = (onText?: (delta: string) => void) =>
        chatCompletion({
          provider: { ...provider, anthropic: recording },
          model: 'claude-sonnet-5-5',
          messages: conversation,
          cache: { ttl: '1h' },
          maxTokens: 100,
          keepJson,
          ...(onText ? { onText } : {}),
        });
      await plainThenStreamed(fake, call);

      const { system, messages } = toAnthropicRequest(
        applyAnthropicCacheControl(conversation, { cacheTtl: '1h', nativeAnthropic: true }),
      );
      const fields = { model: 'claude-sonnet-5-5', max_tokens: 100, messages, system };
      expect(bodies.map((body) => Buffer.isBuffer(body))).toEqual([true, true]);
      expect(bodies.map((body) => String(body))).toEqual([
        JSON.stringify(fields),
        JSON.stringify({ ...fields, stream: true }),
      ]);
      const [plain, streamed] = fake.messageRequests();
      expect(plain?.headers['content-type']).toBe('application/json');
      expect(plain?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
      expect(streamed?.body).toEqual({ ...fields, stream: true });
    },
  );

  describe('cache markers on the wire (SPEC §12, native)', () => {
    async function send(model: string, cache: { ttl: '5m' | '1h' } | null) {
      fake.enqueue(reply('ok'));
      await chatCompletion({ provider: anthropic(), model, messages: conversation, cache });
      return lastBody();
    }

    it('system + the last 3 non-system messages, tool rows included (native), 1h TTL', async () => {
      const body = await send('claude-sonnet-5-5', { ttl: '1h' });
      const ttl = { type: 'ephemeral', ttl: '1h' };
      expect(markerCount(body)).toBe(4);
      expect(body.system).toEqual([{ type: 'text', text: 'You are terse.', cache_control: ttl }]);
      // Marked: tool row toolu_2 (inside the merged user message), 'Both read.', 'Summarise them'.
      expect(body.messages[2].content[0].cache_control).toBeUndefined();
      expect(body.messages[2].content[1].cache_control).toEqual(ttl);
      expect(body.messages[3].content).toEqual([{ type: 'text', text: 'Both read.', cache_control: ttl }]);
      expect(body.messages[4].content).toEqual([{ type: 'text', text: 'Summarise them', cache_control: ttl }]);
      expect(body.messages[1].content.some((b: { cache_control?: unknown }) => b.cache_control)).toBe(false);
    });

    it('5m TTL sends plain ephemeral markers', async () => {
      const body = await send('claude-sonnet-5-5', { ttl: '5m' });
      expect(body.system[0].cache_control).toEqual({ type: 'ephemeral' });
    });

    it('no markers with caching off or for a non-Claude model', async () => {
      expect(markerCount(await send('claude-sonnet-5-5', null))).toBe(0);
      expect(markerCount(await send('kimi-k2', { ttl: '1h' }))).toBe(0);
    });
  });
});
