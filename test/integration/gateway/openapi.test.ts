// The OpenAPI document (DESIGN.md §6: JSON schemas with response schemas, OpenAPI at /docs) and the response schemas
// of issue #10 item 7, on the real services: every route lists a schema for its success and each error status it can
// answer; every status a route answers — in a walk through the API and a seeded fuzz of every route — is one it
// documents; and serialising through the schemas changes nothing a handler returned (fast-json-stringify drops
// undeclared properties and coerces declared types, so each answer is compared with the handler's value).
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../infra/config/loadConfig.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { buildGateway } from '../../../workers/gateway/app.js';
import { llmDepsFromConfig } from '../../../workers/runtime/llmDeps.js';
import { type OpenAIFake, startOpenAIFake } from '../../support/fakes/openaiFake.js';
import { rateLimited, reply, toolCallsReply } from '../../support/fakes/script.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

/** What each route can answer: its success statuses and every error status (issue #10 item 7). */
const ROUTES: Record<string, number[]> = {
  'GET /healthz': [200, 500, 503],
  'GET /metrics': [200, 401, 500],
  'POST /v1/tenants': [201, 400, 401, 403, 413, 415, 500, 503],
  'POST /v1/tenants/{tenantId}/keys': [201, 400, 401, 403, 404, 413, 415, 500, 503],
  'GET /v1/tenants/{tenantId}/keys': [200, 400, 401, 403, 404, 500, 503],
  'POST /v1/tenants/{tenantId}/keys/{keyId}/revoke': [200, 400, 401, 403, 404, 413, 415, 500, 503],
  'POST /v1/tenants/{tenantId}/keys/{keyId}/rotate': [201, 400, 401, 403, 404, 409, 413, 415, 500, 503],
  'PUT /v1/tenants/{tenantId}/policy': [200, 400, 401, 403, 404, 413, 415, 500, 503],
  'DELETE /v1/tenants/{tenantId}': [200, 400, 401, 403, 413, 415, 500, 503],
  'DELETE /v1/tenants/{tenantId}/conversations/{conversationId}': [200, 400, 401, 403, 413, 415, 500, 503],
  'GET /v1/erasures': [200, 400, 401, 403, 500, 503],
  'POST /v1/conversations': [201, 400, 401, 403, 413, 415, 429, 500, 503],
  'POST /v1/conversations/{conversationId}/messages': [
    200, 202, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502, 503,
  ],
  'GET /v1/conversations/{conversationId}/messages': [200, 400, 401, 403, 404, 429, 500, 503],
  'PUT /v1/conversations/{conversationId}/messages/{messageId}/pin': [200, 400, 401, 403, 404, 429, 500, 503],
  'DELETE /v1/conversations/{conversationId}/messages/{messageId}/pin': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/conversations/{conversationId}/context': [200, 400, 401, 403, 404, 429, 500, 503],
  'POST /v1/conversations/{conversationId}/compact': [200, 400, 401, 403, 404, 413, 415, 422, 429, 500, 502, 503],
  'GET /v1/conversations/{conversationId}/status': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/conversations': [200, 400, 401, 403, 429, 500, 503],
  'GET /v1/conversations/{conversationId}/sessions': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/conversations/{conversationId}/sessions/{sessionId}/messages': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/conversations/{conversationId}/export': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/compactions': [200, 400, 401, 403, 429, 500, 503],
  'POST /v1/conversations/{conversationId}/model': [200, 400, 401, 403, 404, 413, 415, 422, 429, 500, 503],
  'GET /v1/events': [200, 400, 401, 403, 429, 500, 503],
  'POST /v1/webhooks': [201, 400, 401, 403, 413, 415, 429, 500, 503],
  'GET /v1/webhooks': [200, 400, 401, 403, 429, 500, 503],
  'DELETE /v1/webhooks/{webhookId}': [200, 400, 401, 403, 404, 429, 500, 503],
  'GET /v1/webhooks/{webhookId}/deliveries': [200, 400, 401, 403, 429, 500, 503],
  'POST /v1/compactions/{compactionId}/replay': [200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502, 503],
  'GET /v1/search': [200, 400, 401, 403, 429, 500, 503],
  'POST /v1/search': [200, 400, 401, 403, 413, 415, 429, 500, 503],
  'POST /v1/chat/completions': [200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502, 503],
  'POST /v1/responses': [200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 502, 503],
  'POST /v1/messages': [200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, 529],
  'POST /v1/messages/count_tokens': [200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, 529],
};
/** Drop-in routes answer errors in their dialect (issue #12). */
const OPENAI_DIALECT = new Set(['POST /v1/chat/completions', 'POST /v1/responses']);
const ANTHROPIC_DIALECT = new Set(['POST /v1/messages', 'POST /v1/messages/count_tokens']);

const BODY_LIMIT = 64 * 1024;
const KEYS = { FAKE_OPENAI_KEY: 'sk-openai' };

let gw: GatewayHarness;
let openai: OpenAIFake;
let app: FastifyInstance;
let url: string;
const adminKey = `admin-${randomUUID()}`;
/** Every (route, status) answered, and every answer whose JSON differs from what the handler returned. */
const answered = new Map<string, Set<number>>();
const changed: Array<{ route: string; status: number; returned: unknown; sent: unknown }> = [];

/** The route as the OpenAPI document names it; null for unknown URLs and the document's own routes. */
const routeOf = (request: FastifyRequest) =>
  request.routeOptions.url === undefined || request.routeOptions.url.startsWith('/docs')
    ? null
    : `${request.method} ${request.routeOptions.url.replace(/:(\w+)/g, '{$1}')}`;

/** Records what each handler (or the error handler) returned and compares it with the bytes sent. */
function observe(target: FastifyInstance): void {
  const returned = new WeakMap<FastifyReply, string>();
  target.addHook('preSerialization', async (_request, response, payload) => {
    returned.set(response, JSON.stringify(payload));
    return payload;
  });
  target.addHook('onSend', async (request, response, payload) => {
    const before = returned.get(response);
    const route = routeOf(request);
    if (before !== undefined && route !== null && typeof payload === 'string') {
      const sent = JSON.parse(payload);
      const expected = JSON.parse(before);
      if (!isDeepStrictEqual(sent, expected))
        changed.push({ route, status: response.statusCode, returned: expected, sent });
    }
    return payload;
  });
  target.addHook('onResponse', async (request, response) => {
    const route = routeOf(request);
    if (route === null) return;
    if (!answered.has(route)) answered.set(route, new Set());
    answered.get(route)!.add(response.statusCode);
  });
}

beforeAll(async () => {
  openai = await startOpenAIFake();
  const config = parseConfigText(
    `providers:\n  openai: { base_url: "${openai.origin}/v1", api_key_env: FAKE_OPENAI_KEY, models: [gpt-test] }\n`,
  );
  const llm = llmDepsFromConfig(config, KEYS, () => undefined);
  gw = await startGatewayHarness({
    stack: { activityDeps: { providers: llm.providers, env: KEYS }, conversations: { waitTimeoutMs: 2_000 } },
  });
  // A second gateway on the harness's database and worker, observed from the first request on.
  app = await buildGateway({
    db: gw.testDb.db,
    conversations: gw.stack.client,
    metrics: createMetrics({ defaultMetrics: false }),
    adminKey,
    cacheTtl: '5m',
    defaultModel: { model: 'acme-chat', provider: null, contextLength: 200_000 },
    bodyLimit: BODY_LIMIT,
    providers: llm.providers,
    env: KEYS,
  });
  observe(app);
  url = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await app?.close();
  await gw?.close();
  await openai?.close();
});

async function call(
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
  options: { raw?: string; contentType?: string } = {},
): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  const payload = options.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
  // An event stream (GET /v1/events) never ends by itself: its status is the answer.
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    await res.body?.cancel();
    return { status: res.status, json: null };
  }
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

describe('the OpenAPI document', () => {
  it('lists every route with a schema for its success and each error status it can answer', async () => {
    const doc = (await call('GET', '/docs/json', null)).json;
    const listed: Record<string, number[]> = {};
    for (const [path, operations] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        const route = `${method.toUpperCase()} ${path}`;
        listed[route] = Object.keys(operation.responses).map(Number);
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          const where = `${route} ${status}`;
          expect(response.description, where).toEqual(expect.any(String));
          const [contentType] = Object.keys(response.content ?? {});
          expect(contentType, where).toBeDefined();
          const schema = response.content[contentType!].schema;
          if (Number(status) >= 400 && ANTHROPIC_DIALECT.has(route)) {
            expect(schema.required, where).toEqual(['type', 'error']);
            expect(Object.keys(schema.properties.error.properties), where).toEqual(['type', 'message']);
          } else if (Number(status) >= 400 && OPENAI_DIALECT.has(route)) {
            expect(schema.required, where).toEqual(['error']);
            expect(Object.keys(schema.properties.error.properties), where).toEqual([
              'message',
              'type',
              'param',
              'code',
            ]);
          } else if (Number(status) >= 400 && route !== 'GET /healthz') {
            expect(schema.required, where).toEqual(['error', 'message', 'statusCode']);
            expect(Object.keys(schema.properties), where).toEqual(['error', 'message', 'statusCode']);
          } else {
            const types = schema.anyOf ? schema.anyOf.map((branch: { type: string }) => branch.type) : [schema.type];
            for (const type of types) expect(type, where).toMatch(/^(object|string)$/);
          }
        }
      }
    }
    expect(listed).toEqual(ROUTES);
  });
});

describe('the routes answer as documented, and the schemas change nothing', () => {
  it('a walk through the API: admin, conversations (hostile content, chat turns), compactions, search, ops', async () => {
    const tenantId = `t-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', '/v1/tenants', adminKey, { id: tenantId, policy: { protect_last_n: 6 } })).status).toBe(
      201,
    );
    expect((await call('POST', '/v1/tenants', adminKey, { id: tenantId })).json.policy).toEqual({ protect_last_n: 6 });
    const { key } = (await call('POST', `/v1/tenants/${tenantId}/keys`, adminKey, { label: 'openapi' })).json;
    expect((await call('PUT', `/v1/tenants/${tenantId}/policy`, adminKey, { protect_last_n: 6 })).status).toBe(200);
    // Keys (issue #14 §4): listed, rotated with an overlap, revoked; a read key refused on a write.
    const keys = `/v1/tenants/${tenantId}/keys`;
    const readKey = (await call('POST', keys, adminKey, { label: 'read', scope: 'read' })).json;
    expect((await call('GET', keys, adminKey)).json.keys).toHaveLength(2);
    const rotated = await call('POST', `${keys}/${readKey.id}/rotate`, adminKey, { overlapSeconds: 60 });
    expect(rotated.status).toBe(201);
    expect((await call('POST', `${keys}/${readKey.id}/revoke`, adminKey, {})).status).toBe(200);
    expect((await call('POST', `${keys}/${readKey.id}/rotate`, adminKey, {})).status).toBe(409);
    expect((await call('POST', '/v1/conversations', rotated.json.key, {})).status).toBe(403);
    expect((await call('PUT', '/v1/tenants/nobody/policy', adminKey, {})).status).toBe(404);
    expect((await call('POST', '/v1/tenants', key, { id: 'sneaky' })).status).toBe(403);
    expect((await call('POST', '/v1/tenants', null, { id: 'anonymous' })).status).toBe(401);
    expect((await call('POST', '/v1/tenants', adminKey, { id: 5 })).status).toBe(400);

    const created = await call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
    expect(created.status).toBe(201);
    const conv = created.json.conversationId as string;
    const hostile = [
      { role: 'user', content: 'show me logo.png', name: 'ali\u0000ce', ['x-note\u0000' as string]: 'a\u0000b' },
      { role: 'assistant', content: 'lone \uD800 high and \uDC00 low surrogates', meta: { deep: ['\u0000', 1.5] } },
      ...agentTranscript(6, { tag: 'kubectl rollout' }),
    ];
    const messages = hostile.map((message, i) => ({ message, idempotencyKey: `h${i}` }));
    expect((await call('POST', `/v1/conversations/${conv}/messages`, key, { messages })).status).toBe(202);
    const processed = await call('POST', `/v1/conversations/${conv}/messages`, key, { messages, wait: true });
    expect(processed.status).toBe(200);
    const conflict = [{ message: { role: 'user', content: 'other' }, idempotencyKey: messages[0]!.idempotencyKey }];
    expect((await call('POST', `/v1/conversations/${conv}/messages`, key, { messages: conflict })).status).toBe(409);
    const big = [{ message: { role: 'user', content: 'x'.repeat(BODY_LIMIT) }, idempotencyKey: 'big' }];
    expect((await call('POST', `/v1/conversations/${conv}/messages`, key, { messages: big })).status).toBe(413);
    const latin1 = { raw: '{"messages":[]}', contentType: 'application/json; charset=latin1' };
    expect((await call('POST', `/v1/conversations/${conv}/messages`, key, undefined, latin1)).status).toBe(415);
    expect((await call('GET', `/v1/conversations/${randomUUID()}/status`, key)).status).toBe(404);
    const claude = { model: 'claude-sonnet-4', provider: 'anthropic', contextLength: 200_000 };
    const unconfigured = (await call('POST', '/v1/conversations', key, claude)).json.conversationId as string;
    const noProvider = { messages: keyed([{ role: 'user', content: 'hello model' }], 'np'), respond: true };
    expect((await call('POST', `/v1/conversations/${unconfigured}/messages`, key, noProvider)).status).toBe(422);

    expect((await call('GET', `/v1/conversations/${conv}/status`, key)).status).toBe(200);
    const read = await call('GET', `/v1/conversations/${conv}/messages`, key);
    expect(read.json.messages.map((m: { message: unknown }) => m.message)).toEqual(hostile);
    for (const query of ['', '?model=claude-sonnet-4&provider=anthropic']) {
      expect((await call('GET', `/v1/conversations/${conv}/context${query}`, key)).status).toBe(200);
    }
    const compacted = await call('POST', `/v1/conversations/${conv}/compact`, key, { focusTopic: 'rollout' });
    expect(compacted.json.status).toBe('committed'); // no summary provider: the extractive summariser (SPEC §19)
    expect((await call('GET', `/v1/conversations/${conv}/messages?archived=true`, key)).status).toBe(200);
    // The history routes (issue #14 §6): pages, sessions, export.
    const page = await call('GET', `/v1/conversations/${conv}/messages?limit=2`, key);
    expect(page.json.nextCursor).toEqual(expect.any(String));
    expect((await call('GET', `/v1/conversations?limit=1&title=x`, key)).status).toBe(200);
    const sessions = await call('GET', `/v1/conversations/${conv}/sessions`, key);
    const sessionPath = `/v1/conversations/${conv}/sessions/${sessions.json.currentSessionId}/messages`;
    expect((await call('GET', `${sessionPath}?cursor=${page.json.nextCursor}`, key)).status).toBe(200);
    expect((await call('GET', `/v1/conversations/${conv}/export`, key)).status).toBe(200);
    expect((await call('GET', `/v1/conversations/${conv}/status`, key)).json.lastCompaction).toMatchObject({
      compactionId: compacted.json.compactionId,
    });
    expect((await call('GET', '/v1/compactions?status=committed', key)).json.compactions).toHaveLength(1);
    expect((await call('POST', `/v1/compactions/${compacted.json.compactionId}/replay`, key)).status).toBe(409);
    expect((await call('POST', `/v1/compactions/${randomUUID()}/replay`, key)).status).toBe(404);
    expect((await call('GET', '/v1/search?q=kubectl&limit=3', key)).json.results.length).toBeGreaterThan(0);
    expect((await call('POST', '/v1/search', key, { q: 'rollout', roles: ['user'] })).status).toBe(200);
    expect((await call('GET', '/v1/search?q=x&roles=robot', key)).status).toBe(400);

    // Chat backend mode: a reply with tool calls, then the final answer.
    const chat = await call('POST', '/v1/conversations', key, {
      model: 'gpt-test',
      provider: 'openai',
      contextLength: 200_000,
    });
    const chatId = chat.json.conversationId as string;
    openai.enqueue(toolCallsReply([{ id: 'c1', name: 'shell', input: { cmd: 'ls' } }]), reply('two files'));
    const turn = await call('POST', `/v1/conversations/${chatId}/messages`, key, {
      messages: keyed([{ role: 'user', content: 'what is here?' }], 'q'),
      respond: true,
      tools: [{ type: 'function', function: { name: 'shell', parameters: { type: 'object' } } }],
    });
    expect(turn.status).toBe(200);
    expect(turn.json.toolCalls).toHaveLength(1);
    const answer = await call('POST', `/v1/conversations/${chatId}/messages`, key, {
      messages: [{ message: { role: 'tool', tool_call_id: 'c1', content: 'a.txt b.txt' }, idempotencyKey: 'r1' }],
      respond: true,
    });
    expect(answer.json.reply).toMatchObject({ role: 'assistant', content: 'two files' });

    // The drop-in OpenAI endpoint: a completion, a refusal naming the field, and the provider's own error.
    openai.enqueue(reply('drop-in answer'));
    const dropin = { model: 'gpt-test', messages: [{ role: 'user', content: 'hello drop-in' }] };
    const completion = await call('POST', '/v1/chat/completions', key, dropin);
    expect(completion.json.choices[0].message.content).toBe('drop-in answer');
    const refused = await call('POST', '/v1/chat/completions', key, { model: 'gpt-test', messages: [] });
    expect(refused).toMatchObject({
      status: 400,
      json: { error: { type: 'invalid_request_error', param: 'messages' } },
    });
    openai.enqueue(rateLimited());
    const limited = await call('POST', '/v1/chat/completions', key, {
      ...dropin,
      messages: [{ role: 'user', content: 'again' }],
    });
    expect(limited).toMatchObject({ status: 429, json: { error: { code: 'rate_limit_exceeded' } } });

    openai.enqueue(reply('responses answer'));
    const viaResponses = await call('POST', '/v1/responses', key, { model: 'gpt-test', input: 'hello responses' });
    expect(viaResponses.json.output[0].content[0].text).toBe('responses answer');
    expect(await call('POST', '/v1/responses', key, { model: 'gpt-test' })).toMatchObject({
      status: 400,
      json: { error: { param: 'input' } },
    });

    // The drop-in Anthropic endpoints: no Anthropic provider is configured here, said in Anthropic's dialect.
    const claudeRequest = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      expect(await call('POST', path, key, claudeRequest)).toMatchObject({
        status: 400,
        json: { type: 'error', error: { type: 'invalid_request_error' } },
      });
    }

    // Erasure (issue #14 §6): a conversation of a throwaway tenant, then the tenant; the audit trail.
    const doomed = `t-${randomUUID().slice(0, 8)}`;
    expect((await call('POST', '/v1/tenants', adminKey, { id: doomed })).status).toBe(201);
    const erasePath = `/v1/tenants/${doomed}/conversations/c1`;
    expect((await call('DELETE', erasePath, adminKey, { confirm: 'c2' })).status).toBe(400);
    expect((await call('DELETE', erasePath, adminKey, { confirm: 'c1', reason: 'walk' })).status).toBe(200);
    expect((await call('DELETE', `/v1/tenants/${doomed}`, adminKey, { confirm: doomed })).status).toBe(200);
    expect((await call('GET', `/v1/erasures?tenantId=${doomed}`, adminKey)).json.erasures).toHaveLength(2);

    expect((await call('GET', '/healthz', null)).json).toEqual({ ok: true });
    expect((await call('GET', '/metrics', null)).status).toBe(200);

    // The worker is down: what waits for the workflow answers 503, reads still answer.
    await gw.stack.stopWorker();
    try {
      const waiting = await call('POST', `/v1/conversations/${conv}/messages`, key, {
        messages: keyed([{ role: 'user', content: 'while down' }], 'down'),
        wait: true,
      });
      expect(waiting.status).toBe(503);
      expect((await call('GET', `/v1/conversations/${conv}/context`, key)).status).toBe(503);
      expect((await call('GET', `/v1/conversations/${conv}/status`, key)).status).toBe(200);
    } finally {
      await gw.stack.startWorker();
    }
  });

  it('a seeded fuzz of every route answers only documented statuses', async () => {
    const { key } = await gw.tenant();
    const conv = (await call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    const routes = Object.keys(ROUTES).filter((r) => !r.endsWith('/messages') || r.startsWith('GET'));
    const value = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom('1e20', '-1'));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          route: fc.constantFrom(...routes),
          param: fc.oneof(fc.constant(conv), fc.uuid(), fc.string({ maxLength: 8 })),
          query: fc.dictionary(fc.constantFrom('q', 'limit', 'offset', 'status', 'archived', 'model'), value, {
            maxKeys: 2,
          }),
          body: fc.oneof(fc.constant(undefined), fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 3 })),
          auth: fc.constantFrom(key, adminKey, null, 'dctx_garbage'),
        }),
        async (r) => {
          const [method, template] = r.route.split(' ') as [string, string];
          const path = template.replace(/\{\w+\}/, encodeURIComponent(r.param.replace(/[\uD800-\uDFFF]/g, '')));
          const query = new URLSearchParams(
            Object.entries(r.query).map(([k, v]) => [k, String(v)] as [string, string]),
          );
          const qs = query.toString();
          await call(method, `${path}${qs ? `?${qs}` : ''}`, r.auth, method === 'GET' ? undefined : r.body);
        },
      ),
      { numRuns: 300, seed: 20261210 },
    );
  });

  it('every status answered is documented for its route; no answer differs from what its handler returned', () => {
    const undocumented = [...answered].flatMap(([route, statuses]) =>
      [...statuses].filter((s) => !ROUTES[route]?.includes(s)).map((s) => `${route} ${s}`),
    );
    expect(undocumented).toEqual([]);
    expect([...answered.keys()].sort()).toEqual(Object.keys(ROUTES).sort());
    expect(changed).toEqual([]);
  });
});
