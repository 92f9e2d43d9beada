// The official Python `openai` SDK (pinned, test/support/clients/requirements.txt), unmodified, against the drop-in
// Chat Completions endpoint (issue #12): a plain completion, a streamed one with usage, a streamed tool call without
// usage, and a refusal — as the Python client sees them, and as the store and the fake upstream saw them.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientScript, ensurePythonClients } from '../../support/clients/python.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { fakeOpenAIProvider } from '../../support/fakes/openaiProvider.js';
import { reply, toolCallsReply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

const run = promisify(execFile);
let python: string;
let openai: OpenAIFake;
let gw: GatewayHarness;

beforeAll(async () => {
  python = ensurePythonClients();
  openai = await startOpenAIFake();
  const { summarizerFor: _unused, ...llm } = fakeOpenAIProvider(openai).llm;
  gw = await startGatewayHarness({ stack: { activityDeps: llm } });
});
afterAll(async () => {
  await gw?.close();
  await openai?.close();
});

describe('the Python openai SDK', () => {
  it('completes, streams with and without usage, streams a tool call, and gets OpenAI’s errors', async () => {
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
});
