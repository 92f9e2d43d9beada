// Both product modes prepare the same context (issue #10 §2, engine/prepareContext.ts): what GET …/context serves is
// what the agent turn sends upstream — the same sanitised messages, the same cache markers for the provider's route.
// A provider under its own id (`claude-proxy`, kind anthropic) caches like Anthropic in both; the route used to decide
// by the provider id and served an unmarked context while the turn sent a marked one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type AnthropicFake, startAnthropicFake } from '../../support/fakes/anthropicFake.js';
import { reply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

let anthropic: AnthropicFake;
let gw: GatewayHarness;
beforeAll(async () => {
  anthropic = await startAnthropicFake();
  const config = parseConfigText(
    [
      'model: { default: claude-sonnet-5, provider: claude-proxy }',
      'providers:',
      `  claude-proxy: { kind: anthropic, base_url: "${anthropic.origin}", api_key_env: PROXY_KEY }`,
      'prompt_caching: { cache_ttl: 1h }',
    ].join('\n'),
  );
  const llm = llmDepsFromConfig(config, { PROXY_KEY: 'sk-proxy' }, () => undefined);
  gw = await startGatewayHarness({ stack: { activityDeps: llm } });
});
afterAll(async () => {
  await gw?.close();
  await anthropic?.close();
});

/** Indexes of the messages that carry a cache marker (on the message or on one of its parts). */
function markedIndexes(messages: readonly unknown[]): number[] {
  return messages.flatMap((m, i) => (JSON.stringify(m).includes('cache_control') ? [i] : []));
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return (content as Array<{ text?: string }>).map((p) => p.text ?? '').join('');
}

describe('the prepared context', () => {
  it('is the one the agent turn sends: same markers, same order, for a provider under its own id', async () => {
    const { key } = await gw.tenant();
    const conv = (
      await gw.call('POST', '/v1/conversations', key, {
        model: 'claude-sonnet-5',
        provider: 'claude-proxy',
        contextLength: 200_000,
      })
    ).json.conversationId as string;
    const history = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
      { role: 'assistant', content: 'four' },
    ].map((message, i) => ({ message, idempotencyKey: `h${i}` }));
    await gw.call('POST', `/v1/conversations/${conv}/messages`, key, { messages: history, wait: true });

    const context = await gw.call('GET', `/v1/conversations/${conv}/context`, key);
    expect(context.status).toBe(200);
    expect(context.json.promptCaching).toMatchObject({
      enabled: true,
      line: '💾 Prompt caching: ENABLED (Claude via Anthropic, 1h TTL)',
    });
    // system + the last three messages
    expect(markedIndexes(context.json.messages)).toEqual([0, 2, 3, 4]);
    expect(JSON.stringify(context.json.messages[0])).toContain('"ttl":"1h"');

    // The agent turn on the same conversation: the same rule for the same provider, one message later.
    anthropic.enqueue(reply('six'));
    const turn = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: 'five?' }, idempotencyKey: 'q5' }],
      respond: true,
    });
    expect(turn.status, turn.text).toBe(200);
    const sent = anthropic.messageRequests()[0]?.body as {
      system: unknown[];
      messages: Array<{ content: unknown }>;
    };
    // Anthropic takes the system message apart: its marker, and the last three of the other messages.
    expect(markedIndexes(sent.system)).toEqual([0]);
    expect(JSON.stringify(sent.system)).toContain('"ttl":"1h"');
    expect(markedIndexes(sent.messages)).toEqual([2, 3, 4]);
    expect(sent.messages.map((m) => textOf(m.content))).toEqual([
      ...context.json.messages.slice(1).map((m: { content: unknown }) => textOf(m.content)),
      'five?',
    ]);
  });
});
