// Request limits (issue #14 §5) on the real gateway: a tenant over its rate is refused with 429 + Retry-After naming
// the limit while another tenant is served at the same time; a key's rate is independent of the tenant's other keys;
// requests in flight are counted per tenant with slow (model) requests; the process default applies unless the
// tenant's policy replaces or lifts it; the limits are validated naming the key, and a change holds at once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { NO_LIMITS } from '../../../infra/config/requestLimits.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { reply } from '../../support/fakes/script.js';
import { type GatewayHarness, type HttpResult, startGatewayHarness } from '../../support/harness/gateway.js';

const KEYS = { FAKE_OPENAI_KEY: 'sk-openai' };
let gw: GatewayHarness;
let openai: OpenAIFake;
let llm: ReturnType<typeof llmDepsFromConfig>;

beforeAll(async () => {
  openai = await startOpenAIFake();
  const config = parseConfigText(
    `providers:\n  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }\n`,
  );
  llm = llmDepsFromConfig(config, KEYS, () => undefined);
  gw = await startGatewayHarness({ stack: { activityDeps: { providers: llm.providers, env: KEYS } } });
});
afterAll(async () => {
  await gw?.close();
  await openai?.close();
});

const list = (key: string) => gw.call('GET', '/v1/compactions', key);
const policy = (tenantId: string, body: unknown) => gw.call('PUT', `/v1/tenants/${tenantId}/policy`, gw.adminKey, body);
const newKey = async (tenantId: string) =>
  (await gw.call('POST', `/v1/tenants/${tenantId}/keys`, gw.adminKey, {})).json.key as string;
const chat = (key: string, content: string) =>
  gw.call('POST', '/v1/chat/completions', key, { model: 'gpt-test', messages: [{ role: 'user', content }] });

function expectRefused(answer: HttpResult, limit: string): number {
  expect(answer.status).toBe(429);
  expect(answer.text).toContain(limit);
  const retryAfter = Number(answer.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1).toBe(true);
  return retryAfter;
}

describe('the policy’s limits', () => {
  it('are validated naming the key, stored beside the compression keys, and answered back', async () => {
    const { id } = await gw.tenant();
    const zero = await policy(id, { limits: { requests_per_minute: 0 } });
    expect(zero.status).toBe(400);
    expect(zero.json.message).toBe(
      'Invalid configuration: limits.requests_per_minute: expected integer 1–2147483647, or null (no limit), got 0',
    );
    expect((await policy(id, { limits: { rpm: 5 } })).json.message).toBe(
      'Invalid configuration: limits.rpm: unknown key',
    );
    expect((await policy(id, { limits: 5 })).json.message).toContain('limits: expected mapping');
    expect((await policy(id, { limits: {}, treshold: 0.5 })).json.message).toContain('compression.treshold');
    const stored = await policy(id, { threshold: 0.6, limits: { max_concurrent: 4, key_burst: null } });
    expect(stored.status).toBe(200);
    expect(stored.json.policy).toEqual({ threshold: 0.6, limits: { max_concurrent: 4, key_burst: null } });
  });
});

describe('a change of the limits alone', () => {
  it('leaves the conversations’ quiet rules alone; a compression change renews them (migration 0009 epochs)', async () => {
    const { id, key } = await gw.tenant();
    expect((await gw.call('POST', '/v1/conversations', key, { conversationId: 'epoch' })).status).toBe(201);
    const epoch = async () =>
      (
        await gw.testDb.db
          .selectFrom('conversations')
          .select('notify_epoch')
          .where('tenant_id', '=', id)
          .executeTakeFirstOrThrow()
      ).notify_epoch;
    const before = await epoch();
    const limited = await policy(id, { limits: { requests_per_minute: 100 } });
    expect(limited.json.policyVersion).toBe(1);
    expect(await epoch()).toBe(before);
    const compression = await policy(id, { threshold: 0.6, limits: { requests_per_minute: 100 } });
    expect(compression.json.policyVersion).toBe(2);
    expect(await epoch()).toBe(before + 1);
  });
});

describe('a tenant’s request rate', () => {
  it('refuses the tenant over it with 429 + Retry-After while another tenant is served at the same time', async () => {
    const limited = await gw.tenant({ limits: { requests_per_minute: 1, burst: 2 } });
    const other = await gw.tenant();
    const first = await Promise.all([
      list(limited.key),
      list(limited.key),
      ...Array.from({ length: 5 }, () => list(other.key)),
    ]);
    expect(first.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
    const [refused, ...served] = await Promise.all([
      list(limited.key),
      ...Array.from({ length: 5 }, () => list(other.key)),
    ]);
    expect(expectRefused(refused!, 'limits.requests_per_minute = 1')).toBeLessThanOrEqual(60);
    expect(refused!.json.message).toContain(`tenant '${limited.id}' is over its rate limit`);
    expect(served.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // Every tenant route, in its dialect: the drop-in endpoints too.
    const viaOpenAI = await chat(limited.key, 'hello');
    expectRefused(viaOpenAI, 'limits.requests_per_minute');
    expect(viaOpenAI.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    const viaAnthropic = await gw.call('POST', '/v1/messages', limited.key, {
      model: 'claude-x',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expectRefused(viaAnthropic, 'limits.requests_per_minute');
    expect(viaAnthropic.json).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expectRefused(await gw.call('GET', '/v1/search?q=x', limited.key), 'limits.requests_per_minute');
    // Admin routes are not the tenant's requests.
    expect((await gw.call('GET', `/v1/tenants/${limited.id}/keys`, gw.adminKey)).status).toBe(200);
    // Lifting the limit holds from the next request.
    expect((await policy(limited.id, { limits: { requests_per_minute: null } })).status).toBe(200);
    expect((await list(limited.key)).status).toBe(200);
  });
});

describe('a key’s request rate', () => {
  it('refuses that key only: another key of the same tenant is unaffected', async () => {
    const tenant = await gw.tenant({ limits: { key_requests_per_minute: 1 } });
    const second = await newKey(tenant.id);
    expect((await list(tenant.key)).status).toBe(200);
    const refused = await list(tenant.key);
    expect(expectRefused(refused, 'limits.key_requests_per_minute = 1')).toBeLessThanOrEqual(60);
    expect(refused.json.message).toContain('this key');
    expect((await list(second)).status).toBe(200);
    expectRefused(await list(second), 'limits.key_requests_per_minute');
  });
});

describe('a tenant’s requests in flight', () => {
  it('with a slow request in flight, the tenant’s next is refused, another tenant’s served; then admitted', async () => {
    const busy = await gw.tenant({ limits: { max_concurrent: 1 } });
    const other = await gw.tenant({ limits: { max_concurrent: 1 } });
    const received = openai.chatRequests().length;
    openai.enqueue(reply('slow answer', { delayMs: 5_000 }));
    const slow = chat(busy.key, `slow ${randomUUID()}`);
    while (openai.chatRequests().length === received) await new Promise((resolve) => setTimeout(resolve, 20));
    const [refused, served] = await Promise.all([list(busy.key), list(other.key)]);
    expect(expectRefused(refused, 'limits.max_concurrent = 1')).toBe(1);
    expect(refused.json.message).toContain(`tenant '${busy.id}' has 1 requests in flight`);
    expect(served.status).toBe(200);
    const answered = await slow;
    expect(answered.status).toBe(200);
    expect(answered.json.choices[0].message.content).toBe('slow answer');
    expect((await list(busy.key)).status).toBe(200);
    // Refusals counted nowhere: sequential requests stay within one in flight.
    for (let i = 0; i < 3; i += 1) expect((await list(busy.key)).status).toBe(200);
    // Operators see the refusals by limit.
    const metrics = (await gw.call('GET', '/metrics', null)).text;
    expect(metrics).toMatch(/^dctx_request_limit_refusals_total\{limit="max_concurrent"\} [1-9]/m);
    expect(metrics).toMatch(/^dctx_request_limit_refusals_total\{limit="requests_per_minute"\} [1-9]/m);
  });
});

describe('a streamed answer', () => {
  it('holds its slot while it streams; a client that goes away frees it', async () => {
    const tenant = await gw.tenant({ limits: { max_concurrent: 1 } });
    openai.enqueue(reply('one two three four five six seven eight nine ten', { eventGapMs: 300 }));
    const disconnect = new AbortController();
    const streamed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'stream' }] }),
      signal: disconnect.signal,
    });
    expect(streamed.status).toBe(200);
    await streamed.body!.getReader().read(); // the first chunk: the answer is streaming
    expectRefused(await list(tenant.key), 'limits.max_concurrent = 1');
    disconnect.abort();
    await vi.waitFor(async () => expect((await list(tenant.key)).status).toBe(200), { timeout: 30_000, interval: 50 });
  });
});

describe('the process-wide default (DURABLE_CONTEXT_LIMITS)', () => {
  it('applies to every tenant unless its policy replaces or lifts the key', async () => {
    const app = await gw.another({ limits: { ...NO_LIMITS, keyRequestsPerMinute: 1 } });
    try {
      const get = async (key: string) =>
        (await app.inject({ method: 'GET', url: '/v1/compactions', headers: { authorization: `Bearer ${key}` } }))
          .statusCode;
      const plain = await gw.tenant();
      const lifted = await gw.tenant({ limits: { key_requests_per_minute: null } });
      const raised = await gw.tenant({ limits: { key_requests_per_minute: 100 } });
      expect([await get(plain.key), await get(plain.key)]).toEqual([200, 429]);
      expect([await get(lifted.key), await get(lifted.key), await get(lifted.key)]).toEqual([200, 200, 200]);
      expect([await get(raised.key), await get(raised.key), await get(raised.key)]).toEqual([200, 200, 200]);
    } finally {
      await app.close();
    }
  });
});
