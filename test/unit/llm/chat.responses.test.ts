// chatCompletion over the OpenAI Responses API (issue #13 §1, SPEC §15.1) through the real `openai` SDK against the
// fake server: the stateless request (store: false, no previous_response_id), replay items first, the
// context_management field only when asked, the rejection rule with its one retry, streamed text, and `compaction`
// output items returned apart from the reply.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../engine/types.js';
import { chatCompletion } from '../../../infra/llm/chat.js';
import { LlmFailureType } from '../../../infra/llm/errors.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply, toolCallsReply } from '../../support/fakes/script.js';
import { clientFor, failureOf, TEST_KEY } from './helpers.js';

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

const codex = () => clientFor('openai-codex', 'openai', fake.baseURL, { extra: { api: 'responses' } });
const messages: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'List the files' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
  },
  { role: 'tool', content: 'a.ts b.ts', tool_call_id: 'c1' },
  { role: 'user', content: 'And the tests?' },
];
const body = (i = -1) => fake.responsesRequests().at(i)?.body as Record<string, any>;
const CHECKPOINT = { id: 'cmp_old', type: 'compaction', encrypted_content: 'gAAAA-opaque' };

describe('chatCompletion — Responses API', () => {
  it('sends a stateless request: instructions, input items, flat tools; reads text, calls and usage', async () => {
    fake.enqueue(toolCallsReply([{ id: 'c2', name: 'run_tests', input: { all: true } }], 'Running them.'));
    const result = await chatCompletion({
      provider: codex(),
      model: 'gpt-5.6',
      messages,
      cache: null,
      maxTokens: 500,
      tools: [
        { type: 'function', function: { name: 'run_tests', description: 'Run', parameters: { type: 'object' } } },
      ],
    });
    const sent = body();
    expect(fake.chatRequests()).toHaveLength(0);
    expect(sent).toMatchObject({
      model: 'gpt-5.6',
      store: false,
      instructions: 'You are terse.',
      max_output_tokens: 500,
    });
    expect(sent).not.toHaveProperty('previous_response_id');
    expect(sent).not.toHaveProperty('context_management');
    expect(sent.tools).toEqual([
      { type: 'function', name: 'run_tests', description: 'Run', parameters: { type: 'object' }, strict: false },
    ]);
    expect(sent.input.map((item: Record<string, unknown>) => item.type)).toEqual([
      'message',
      'function_call',
      'function_call_output',
      'message',
    ]);
    expect(result.message).toEqual({
      role: 'assistant',
      content: 'Running them.',
      tool_calls: [{ id: 'c2', type: 'function', function: { name: 'run_tests', arguments: '{"all":true}' } }],
    });
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toMatchObject({ prompt_tokens: 1_200, completion_tokens: 80, uncached_input_tokens: 1_200 });
    expect(result.compactionItems).toEqual([]);
    expect(result.nativeRejected).toBe(false);
  });

  it('sends replay items first and context_management when asked; returns the compaction item apart', async () => {
    fake.enqueue(reply('Done.', { compaction: 'gAAAA-new-checkpoint', usage: { input_tokens: 190_500 } }));
    const result = await chatCompletion({
      provider: codex(),
      model: 'gpt-5.6-sol-900k',
      messages,
      cache: null,
      leadingItems: [CHECKPOINT],
      compactThreshold: 196_000,
    });
    const sent = body();
    expect(sent.model).toBe('gpt-5.6-sol');
    expect(sent.context_management).toEqual([{ type: 'compaction', compact_threshold: 196_000 }]);
    expect(sent.input[0]).toEqual(CHECKPOINT);
    expect(result.message).toEqual({ role: 'assistant', content: 'Done.' });
    expect(result.compactionItems).toEqual([
      expect.objectContaining({ type: 'compaction', encrypted_content: 'gAAAA-new-checkpoint' }),
    ]);
    expect(result.usage.prompt_tokens).toBe(190_500);
  });

  it.each([
    ['its param', { param: 'context_management', message: 'Unknown parameter.' }],
    [
      'unsupported_parameter naming compaction',
      { code: 'unsupported_parameter', message: 'Compaction is not supported for this model.' },
    ],
  ])('a 4xx naming context_management (%s): the same request once more without it', async (_name, error) => {
    fake.enqueue({ kind: 'error', status: 400, ...error }, reply('Fine.'));
    const result = await chatCompletion({
      provider: codex(),
      model: 'gpt-5.6',
      messages,
      cache: null,
      leadingItems: [CHECKPOINT],
      compactThreshold: 100_000,
    });
    const [first, second] = fake.responsesRequests().map((r) => r.body as Record<string, any>);
    expect(fake.responsesRequests()).toHaveLength(2);
    expect(first?.context_management).toBeDefined();
    expect(second).not.toHaveProperty('context_management');
    const { context_management: _dropped, ...rest } = first ?? {};
    expect(second).toEqual(rest);
    expect(result.nativeRejected).toBe(true);
    expect(result.message.content).toBe('Fine.');
  });

  it('other errors are not retried: a 400 about another field, a rejection-shaped 500, no field sent', async () => {
    fake.enqueue({ kind: 'error', status: 400, param: 'tools', message: 'Invalid tools.' });
    const bad = await failureOf(
      chatCompletion({ provider: codex(), model: 'gpt-5.6', messages, cache: null, compactThreshold: 1 }),
    );
    expect(bad.type).toBe(LlmFailureType.BadRequest);
    fake.enqueue({ kind: 'error', status: 500, param: 'context_management' });
    const server = await failureOf(
      chatCompletion({ provider: codex(), model: 'gpt-5.6', messages, cache: null, compactThreshold: 1 }),
    );
    expect(server.nonRetryable).toBe(false);
    fake.enqueue({ kind: 'error', status: 400, param: 'context_management' });
    await failureOf(chatCompletion({ provider: codex(), model: 'gpt-5.6', messages, cache: null }));
    expect(fake.responsesRequests()).toHaveLength(3);
  });

  it('the replay account: the provider’s label when set, else a fingerprint of the key, never the key', () => {
    expect(codex().account).toMatch(/^[0-9a-f]{16}$/);
    expect(codex().account).not.toContain(TEST_KEY);
    const labelled = clientFor('openai-codex', 'openai', fake.baseURL, {
      extra: { api: 'responses', account: 'team-a' },
    });
    expect(labelled.account).toBe('team-a');
  });

  it('streamed: the text arrives in pieces that add up to the reply; the compaction item is still returned', async () => {
    fake.enqueue(reply('A longer answer, streamed in pieces.', { compaction: 'gAAAA-streamed' }));
    const pieces: string[] = [];
    const result = await chatCompletion({
      provider: codex(),
      model: 'gpt-5.6',
      messages,
      cache: null,
      compactThreshold: 50_000,
      onText: (delta) => pieces.push(delta),
    });
    expect(body().stream).toBe(true);
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('A longer answer, streamed in pieces.');
    expect(result.message.content).toBe('A longer answer, streamed in pieces.');
    expect(result.compactionItems).toEqual([expect.objectContaining({ encrypted_content: 'gAAAA-streamed' })]);
  });
});
