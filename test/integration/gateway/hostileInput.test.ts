// Hostile input against the HTTP gateway on the real services (issue #9 §1 and §7): what is accepted is stored and
// round-trips exactly (NUL, unpaired surrogates, binary tool output), what cannot be stored is a 400 that names the
// field before anything is written, types are never coerced, a reused key with another message is 409, and no input
// wedges the conversation: after each hostile batch a normal message is processed (wait: true is bounded at 5 s).
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { allRows } from '../workflows/transcript.js';

let gw: GatewayHarness;
let key: string;
let tenantId: string;
beforeAll(async () => {
  gw = await startGatewayHarness({ requestTimeoutMs: 1_500, stack: { conversations: { waitTimeoutMs: 5_000 } } });
  ({ key, id: tenantId } = await gw.tenant());
});
afterAll(async () => {
  await gw?.close();
});

const call = (
  method: string,
  path: string,
  body?: unknown,
  options?: { raw?: string; headers?: Record<string, string> },
) => gw.call(method, path, key, body, options);

async function conversation(): Promise<string> {
  const res = await call('POST', '/v1/conversations', { model: 'acme-chat', contextLength: 200_000 });
  expect(res.status).toBe(201);
  return res.json.conversationId;
}

/** A normal message goes through and is processed (the wait is bounded: 503 after 5 s would fail here). */
async function expectAlive(conv: string, tag: string): Promise<void> {
  const res = await call('POST', `/v1/conversations/${conv}/messages`, {
    messages: [{ message: { role: 'user', content: `still alive ${tag}` }, idempotencyKey: `alive-${tag}` }],
    wait: true,
  });
  expect(res.status, res.text).toBe(200);
}

const post = (conv: string, body: unknown, raw?: string) =>
  call('POST', `/v1/conversations/${conv}/messages`, body, raw === undefined ? undefined : { raw });

describe('content PostgreSQL cannot hold is stored losslessly and given back exactly', () => {
  it('NUL and unpaired surrogates in content, name, unknown fields and tool output; binary tool output', async () => {
    const conv = await conversation();
    const png = '\u0089PNG\r\n\u001a\n\u0000\u0000\u0000\rIHDR\u0000\u0000\u0000\u0010';
    const messages = [
      { role: 'user', content: 'show me logo.png', name: 'ali\u0000ce', ['x-note\u0000' as string]: 'a\u0000b' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'shell', arguments: '{"cmd":"head -c 16 logo.png"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', name: 'shell', content: png },
      { role: 'assistant', content: 'lone \uD800 high and \uDC00 low surrogates', meta: { deep: ['\u0000'] } },
    ];
    const res = await post(conv, {
      messages: messages.map((message, i) => ({ message, idempotencyKey: `h${i}` })),
      wait: true,
    });
    expect(res.status, res.text).toBe(200);
    const read = await call('GET', `/v1/conversations/${conv}/messages`);
    expect(read.json.messages.map((m: { message: unknown }) => m.message)).toEqual(messages);
    // Re-sending the same batch is a harmless duplicate (its stored form is identical).
    const again = await post(conv, { messages: messages.map((message, i) => ({ message, idempotencyKey: `h${i}` })) });
    expect(again.json).toEqual({ accepted: 4, stored: 0, duplicates: 4 });
    await expectAlive(conv, 'lossless');
  });

  it('a tool output of 590 KB of distinct tokens, more words than one tsvector holds: stored whole and searchable', async () => {
    const conv = await conversation();
    // 60,000 file names (590 KB): PostgreSQL's tsvector of this text would exceed its 1 MB cap (migrations/0028).
    const listing = Array.from({ length: 60_000 }, (_, i) => `f${i}.ts`).join('\n');
    const content = `lsfiles listing\n${listing}\nendmarker 完了`;
    const messages = [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'ls', type: 'function', function: { name: 'shell', arguments: '{"cmd":"ls"}' } }],
      },
      { role: 'tool', tool_call_id: 'ls', name: 'shell', content },
    ];
    const res = await post(conv, { messages: messages.map((message, i) => ({ message, idempotencyKey: `ls${i}` })) });
    expect(res.status, res.text).toBe(202);
    const read = await call('GET', `/v1/conversations/${conv}/messages`);
    expect(read.json.messages.map((m: { message: unknown }) => m.message)).toEqual(messages);
    const found = async (query: string) => (await call('GET', `/v1/search?q=${encodeURIComponent(query)}`)).json;
    // Its first words on the Latin path (not its last: they are beyond the part indexed), any of its text on the CJK
    // path.
    expect((await found('lsfiles')).results).toHaveLength(1);
    expect((await found('endmarker')).results).toHaveLength(0);
    expect((await found('endmarker 完了')).results).toHaveLength(1);
    await expectAlive(conv, 'tsvector');
  });
});

describe('refused with a 400 naming the field, before anything is written', () => {
  let conv: string;
  beforeAll(async () => {
    conv = await conversation();
  });

  const one = (message: unknown, extra: Record<string, unknown> = {}) => ({
    messages: [{ message, idempotencyKey: `k-${Math.random()}` }],
    ...extra,
  });
  /** JSON text nested `levels` deep (built as text: JSON.stringify itself overflows the stack on such values). */
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}"leaf"${'}'.repeat(levels)}`;

  it.each([
    [
      'usage.prompt_tokens 1.5',
      one({ role: 'assistant', content: 'x' }, { usage: { prompt_tokens: 1.5 } }),
      'usage.prompt_tokens',
    ],
    [
      'usage.prompt_tokens 1e300',
      one({ role: 'assistant', content: 'x' }, { usage: { prompt_tokens: 1e300 } }),
      'usage.prompt_tokens',
    ],
    [
      'usage.prompt_tokens 2^63',
      one({ role: 'assistant', content: 'x' }, { usage: { prompt_tokens: 2 ** 63 } }),
      'usage.prompt_tokens',
    ],
    ['content 12345', one({ role: 'user', content: 12345 }), 'content'],
    ['content true', one({ role: 'user', content: true }), 'content'],
    ['content [1]', one({ role: 'user', content: [1] }), 'content'],
    [
      'a numeric idempotencyKey',
      { messages: [{ message: { role: 'user', content: 'x' }, idempotencyKey: 7 }] },
      'idempotencyKey',
    ],
    [
      'a NUL in the idempotencyKey',
      { messages: [{ message: { role: 'user', content: 'x' }, idempotencyKey: 'a\u0000' }] },
      'idempotencyKey',
    ],
    ['a numeric tool_call_id', one({ role: 'tool', content: 'x', tool_call_id: 5 }), 'tool_call_id'],
    ['a numeric name', one({ role: 'user', content: 'x', name: 5 }), 'name'],
  ])('%s', async (_what, body, field) => {
    const res = await post(conv, body);
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toContain(field);
  });

  it.each([
    [
      'usage',
      `{"messages":[{"message":{"role":"assistant","content":"x"},"idempotencyKey":"d1"}],"usage":${deep(10_000)}}`,
    ],
    [
      'an unknown field',
      `{"messages":[{"message":{"role":"user","content":"x","extra":${deep(10_000)}},"idempotencyKey":"d2"}]}`,
    ],
  ])('%s nested 10,000 deep', async (_what, raw) => {
    const res = await post(conv, undefined, raw);
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toContain('is nested deeper than 64 levels');
  });

  it('a number JSON cannot represent (1e400 parses as Infinity) is refused with its path', async () => {
    const res = await post(
      conv,
      undefined,
      '{"messages":[{"message":{"role":"user","content":"x","n":1e400},"idempotencyKey":"inf"}]}',
    );
    expect(res.status).toBe(400);
    expect(res.json.message).toBe('body.messages[0].message.n is a number outside the representable range');
  });

  it.each([
    ['conversationId ["a"]', { conversationId: ['a'] }, 'conversationId'],
    ['contextLength 1e300', { contextLength: 1e300 }, 'contextLength'],
    ['contextLength 2.5', { contextLength: 2.5 }, 'contextLength'],
    ['a NUL in the title', { title: 'a\u0000b' }, 'title'],
    ['a NUL in the source', { source: 'c\u0000li' }, 'source'],
    ['a NUL in the model', { model: 'gpt\u0000' }, 'model'],
    ['a numeric title', { title: 5 }, 'title'],
  ])('create with %s', async (_what, body, field) => {
    const res = await call('POST', '/v1/conversations', body);
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toContain(field);
  });

  it.each([
    ['offset 1e20', '/v1/search?q=hello&offset=100000000000000000000', 'offset'],
    ['offset 2^63-1', '/v1/search?q=hello&offset=9223372036854775807', 'offset'],
    ['a NUL in q', `/v1/search?q=${encodeURIComponent('a\u0000b')}`, 'q'],
    ['a NUL in excludeSources', `/v1/search?q=a&excludeSources=${encodeURIComponent('cli,\u0000')}`, 'excludeSources'],
    ['compactions offset 1e20', '/v1/compactions?offset=100000000000000000000', 'offset'],
  ])('GET with %s', async (_what, path, field) => {
    const res = await call('GET', path);
    expect(res.status, res.text).toBe(400);
    expect(res.json.message).toContain(field);
  });

  it('a NUL in focusTopic, in a tenant name and in a key label; admin {"id": 5}', async () => {
    const focus = await call('POST', `/v1/conversations/${conv}/compact`, { focusTopic: 'x\u0000y' });
    expect(focus.status).toBe(400);
    expect(focus.json.message).toContain('focusTopic');
    const admin = (body: unknown, path = '/v1/tenants') => gw.call('POST', path, gw.adminKey, body);
    expect((await admin({ id: 't-nul', name: 'a\u0000' })).json.message).toContain('name');
    expect((await admin({ id: 5 })).status).toBe(400);
    const label = await admin({ label: 'l\u0000' }, `/v1/tenants/${tenantId}/keys`);
    expect(label.status).toBe(400);
    expect(label.json.message).toContain('label');
  });

  it('a body in another charset is 415; nothing of all this was written', async () => {
    const res = await call('POST', `/v1/conversations/${conv}/messages`, undefined, {
      raw: JSON.stringify(one({ role: 'user', content: 'utf-16?' })),
      headers: { 'content-type': 'application/json; charset=utf-16' },
    });
    expect(res.status).toBe(415);
    expect(res.json.message).toContain('charset');
    const rows = await allRows(gw.testDb.db, tenantId);
    expect(rows.filter((r) => r.session_id === (res.json.sessionId ?? '')).length).toBe(0);
    const status = await call('GET', `/v1/conversations/${conv}/status`);
    expect(status.json.activeMessages).toBe(0);
    await expectAlive(conv, 'refusals');
  });
});

describe('reused keys, slow bodies and long queries', () => {
  it('the same key with different content is 409 naming the key; the same content stays a no-op', async () => {
    const conv = await conversation();
    const variants = Array.from({ length: 20 }, (_, i) =>
      post(conv, { messages: [{ message: { role: 'user', content: `variant ${i}` }, idempotencyKey: 'contested' }] }),
    );
    const results = await Promise.all(variants);
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    const conflicts = results.filter((r) => r.status === 409);
    expect(conflicts).toHaveLength(19);
    expect(conflicts[0]!.json.message).toContain("idempotencyKey 'contested'");
    const winner = results.findIndex((r) => r.status === 202);
    const same = await post(conv, {
      messages: [{ message: { role: 'user', content: `variant ${winner}` }, idempotencyKey: 'contested' }],
    });
    expect(same.json).toMatchObject({ stored: 0, duplicates: 1 });
    const read = await call('GET', `/v1/conversations/${conv}/messages`);
    expect(read.json.messages.map((m: any) => m.message.content)).toEqual([`variant ${winner}`]);
  });

  it('a request whose body never finishes is answered 408 and its connection closed', async () => {
    const url = new URL(gw.url);
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.write(
      `POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"q": "never',
    );
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });

  it('POST /v1/search takes a CJK query too long for a URL (1,800 characters)', async () => {
    const conv = await conversation();
    await post(conv, {
      messages: [{ message: { role: 'user', content: '圧縮のテスト' }, idempotencyKey: 'cjk' }],
      wait: true,
    });
    const q = `圧縮 ${'字'.repeat(1_800)}`;
    const viaGet = await call('GET', `/v1/search?q=${encodeURIComponent(q)}`);
    expect(viaGet.status).toBe(431);
    const viaPost = await call('POST', '/v1/search', { q: '圧縮', sort: 'newest' });
    expect(viaPost.json.results.map((r: any) => r.snippet)).toEqual(['>>>圧縮<<<のテスト']);
    const long = await call('POST', '/v1/search', { q });
    expect(long.status).toBe(200);
    expect(long.json.results).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: random hostile batches never get a 5xx, whatever is accepted reads back exactly, and the conversation
// keeps working after every one.

const nasty = fc.oneof(
  fc.string(),
  fc.constantFrom('\u0000', '\uD800', '\uDFFF', 'a\u0000b\uDBFFc', '\u0000'.repeat(3), '字\u0000字'),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ minLength: 20_000, maxLength: 40_000 }),
);
const number = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(1e300, -1e300, 2 ** 63, 1.5, -0));
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, nasty, number, fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 3 }),
  object: fc.dictionary(nasty, tie('value'), { maxKeys: 3 }),
})).value;
const deepValue = fc.integer({ min: 1, max: 120 }).map((levels) => {
  let v: unknown = 'x';
  for (let i = 0; i < levels; i++) v = [v];
  return v;
});
const message = fc.record(
  {
    role: fc.constantFrom('user', 'assistant', 'system', 'tool', 'robot'),
    content: fc.oneof(
      nasty,
      fc.constant(null),
      fc.array(fc.record({ type: fc.constant('text'), text: nasty }), { maxLength: 2 }),
      number,
    ),
    name: nasty,
    tool_call_id: nasty,
    extra: fc.oneof(json, deepValue),
  },
  { requiredKeys: ['role', 'content'] },
);
const hostileBatch = fc.record(
  {
    messages: fc.array(fc.record({ message, idempotencyKey: fc.oneof(fc.uuid(), nasty) }), {
      minLength: 1,
      maxLength: 4,
    }),
    usage: fc.record({ prompt_tokens: number, completion_tokens: number }, { requiredKeys: [] }),
  },
  { requiredKeys: ['messages'] },
);

describe('property: random hostile batches', () => {
  it('never 5xx; accepted batches read back exactly; a normal message is processed after each', async () => {
    const conv = await conversation();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(hostileBatch, async (batch) => {
        run += 1;
        const res = await post(conv, batch);
        expect([202, 400, 409, 413], res.text).toContain(res.status);
        if (res.status === 202) {
          const read = await call('GET', `/v1/conversations/${conv}/messages`);
          const stored = read.json.messages.map((m: { message: unknown }) => m.message);
          for (const item of batch.messages) expect(stored).toContainEqual(JSON.parse(JSON.stringify(item.message)));
        }
        await expectAlive(conv, `p${run}`);
      }),
      { numRuns: 40, seed: 20261201 },
    );
  });
});

// Every route with random hostile input (issue #9 §7: "20 distinct 5xx in a 2,100-request fuzz of every route"):
// random path parameters, query strings, bodies (JSON of any shape, invalid JSON, other content types) and keys.
const ROUTES: Array<[method: string, path: string]> = [
  ['POST', '/v1/tenants'],
  ['POST', '/v1/tenants/:tenant/keys'],
  ['PUT', '/v1/tenants/:tenant/policy'],
  ['POST', '/v1/conversations'],
  ['POST', '/v1/conversations/:conv/messages'],
  ['GET', '/v1/conversations/:conv/messages'],
  ['GET', '/v1/conversations/:conv/context'],
  ['GET', '/v1/conversations/:conv/status'],
  ['POST', '/v1/conversations/:conv/compact'],
  ['GET', '/v1/compactions'],
  ['POST', '/v1/compactions/:compaction/replay'],
  ['GET', '/v1/search'],
  ['POST', '/v1/search'],
  ['GET', '/healthz'],
  ['GET', '/metrics'],
];
const queryValue = fc.oneof(
  nasty,
  number.map(String),
  fc.constantFrom('1e20', '9223372036854775807', '-1', 'true', '[]', '%00', 'newest', 'user,robot'),
);
const fuzzRequest = fc.record({
  route: fc.constantFrom(...ROUTES),
  param: fc.oneof(fc.constant('known'), nasty, fc.uuid()),
  query: fc.dictionary(
    fc.constantFrom('q', 'offset', 'limit', 'status', 'sort', 'roles', 'archived', 'model', 'x'),
    queryValue,
    {
      maxKeys: 3,
    },
  ),
  body: fc.oneof(
    { weight: 3, arbitrary: json.map((value) => ({ kind: 'json' as const, value })) },
    {
      weight: 3,
      arbitrary: hostileBatch.map((value) => ({ kind: 'json' as const, value: { ...value, wait: false } })),
    },
    { weight: 1, arbitrary: fc.string().map((text) => ({ kind: 'raw' as const, text })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  ),
  contentType: fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/json; charset=latin1',
  ),
  auth: fc.constantFrom('tenant', 'admin', 'none', 'garbage'),
});

describe('property: random requests to every route', () => {
  it('never answer 5xx', async () => {
    const conv = await conversation();
    const counts = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fuzzRequest, async (r) => {
        const [method, template] = r.route;
        // A URL carries UTF-8: an unpaired surrogate cannot be sent (encodeURIComponent refuses it).
        const param = (r.param === 'known' ? conv : r.param).replace(/[\uD800-\uDFFF]/g, '\uFFFD');
        const path = template
          .replace(':tenant', encodeURIComponent(r.param === 'known' ? tenantId : param))
          .replace(':conv', encodeURIComponent(param))
          .replace(':compaction', encodeURIComponent(param));
        const qs = new URLSearchParams(r.query).toString();
        const headers: Record<string, string> = {};
        const bearer = { tenant: key, admin: gw.adminKey, garbage: 'dctx_garbage', none: null }[r.auth];
        if (bearer) headers.authorization = `Bearer ${bearer}`;
        let body: string | undefined;
        if (method !== 'GET' && r.body.kind !== 'none') {
          headers['content-type'] = r.contentType;
          body = r.body.kind === 'raw' ? r.body.text : JSON.stringify(r.body.value);
        }
        const res = await fetch(`${gw.url}${path}${qs ? `?${qs}` : ''}`, {
          method,
          headers,
          ...(body !== undefined ? { body } : {}),
        });
        const text = await res.text();
        counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
        expect(res.status, `${method} ${path}?${qs} → ${text.slice(0, 300)}`).toBeLessThan(500);
      }),
      { numRuns: 2_100, seed: 1201 },
    );
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    console.info(`fuzz of every route: ${total} requests, statuses ${JSON.stringify(Object.fromEntries(counts))}`);
    expect(total).toBe(2_100);
    await expectAlive(conv, 'fuzz');
  });
});
