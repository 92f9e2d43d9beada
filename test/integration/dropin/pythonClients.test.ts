// The official Python `openai` and `anthropic` SDKs (pinned, test/support/clients/requirements.txt), unmodified,
// against the drop-in endpoints (issue #12): plain, streamed and tool-calling requests, a token count and a refusal —
// as the Python client sees them, and as the store and the fake upstreams saw them.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { clientScript, ensurePythonClients } from '../../support/clients/python.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply, toolCallsReply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

const run = promisify(execFile);
let python: string;
let openai: OpenAIFake;
let anthropic: AnthropicFake;
let gw: GatewayHarness;

beforeAll(async () => {
  python = ensurePythonClients();
  openai = await startOpenAIFake();
  anthropic = await startAnthropicFake();
  const config = parseConfigText(
    [
      'model: { default: gpt-test, provider: openai }',
      'providers:',
      `  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }`,
      `  anthropic: { base_url: "${anthropic.origin}", api_key_env: FAKE_ANTHROPIC_KEY }`,
    ].join('\n'),
  );
  const keys = { FAKE_OPENAI_KEY: 'sk-openai', FAKE_ANTHROPIC_KEY: 'sk-anthropic' };
  const { summarizerFor: _unused, ...llm } = llmDepsFromConfig(config, keys, () => undefined);
  gw = await startGatewayHarness({ stack: { activityDeps: llm } });
});
afterAll(async () => {
  await gw?.close();
  await openai?.close();
  await anthropic?.close();
});

describe('the official Python SDKs', () => {
  it('the Python openai SDK: completes, streams with and without usage, streams a tool call, gets OpenAI’s errors', async () => {
    const { key } = await gw.tenant();
    const conversationId = `py-${randomUUID()}`;
    openai.enqueue(
      reply('Seven.'),
      reply('Eleven, streamed.'),
      toolCallsReply([{ id: 'call_py', name: 'lookup', input: { n: 13 } }]),
    );
    const { stdout } = await run(python, [clientScript('openai_chat.py'), `${gw.url}/v1`, key, conversationId]);
    const seen = JSON.parse(stdout);
    expect(seen).toMatchObject({
      first: 'Seven.',
      streamed: 'Eleven, streamed.',
      tool_calls: [{ id: 'call_py', arguments: '{"n":13}' }],
      usage_without_asking: false,
      error: { class: 'BadRequestError', status: 400, param: 'messages', type: 'invalid_request_error' },
    });
    expect(seen.streamed_usage).toBeGreaterThan(0);

    // What the Python client sent, upstream: its own requests (the reply it got back included, as it echoed it).
    const sent = openai.chatRequests().slice(-3);
    expect(sent[0]?.body).toMatchObject({ model: 'gpt-test', temperature: 0 });
    expect(sent[1]?.body.messages.at(2)).toMatchObject({ role: 'assistant', content: 'Seven.' });
    expect(sent[2]?.body.tools).toHaveLength(1);

    const stored = await gw.call('GET', `/v1/conversations/${conversationId}/messages`, key);
    expect(stored.json.messages.map((m: any) => [m.message.role, m.message.content])).toEqual([
      ['system', 'You are a terse assistant.'],
      ['user', 'Name a prime number.'],
      ['assistant', 'Seven.'],
      ['user', 'Another one, streamed.'],
      ['assistant', 'Eleven, streamed.'],
      ['user', 'Look it up with the tool.'],
      ['assistant', null],
    ]);
    expect(stored.json.messages.at(-1).message.tool_calls[0]).toMatchObject({ id: 'call_py' });
  });

  it('the Python anthropic SDK: creates, streams, streams a tool use, counts tokens, gets Anthropic’s errors', async () => {
    const { key } = await gw.tenant();
    const conversationId = `pyan-${randomUUID()}`;
    anthropic.enqueue(
      reply('Seven.'),
      reply('Eleven, streamed.'),
      toolCallsReply([{ id: 'toolu_py', name: 'lookup', input: { n: 13 } }]),
    );
    const { stdout } = await run(python, [clientScript('anthropic_messages.py'), gw.url, key, conversationId]);
    const seen = JSON.parse(stdout);
    expect(seen).toMatchObject({
      first: 'Seven.',
      streamed: 'Eleven, streamed.',
      tool_use: [{ id: 'toolu_py', name: 'lookup', input: { n: 13 } }],
      error: {
        class: 'BadRequestError',
        status: 400,
        body: { type: 'error', error: { type: 'invalid_request_error' } },
      },
    });
    expect(seen.streamed_usage).toBeGreaterThan(0);
    expect(seen.counted).toBeGreaterThan(0);
    // The client's echo of each reply (content blocks) matched what was stored: one conversation, once each.
    const sent = anthropic.messageRequests().slice(-3);
    expect(sent[1]?.body.messages.at(1)).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'Seven.' }],
    });
    const stored = await gw.call('GET', `/v1/conversations/${conversationId}/messages`, key);
    expect(stored.json.messages.map((m: any) => m.message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(stored.json.messages.at(-1).message.tool_calls[0]).toMatchObject({ id: 'toolu_py' });
  });
});
