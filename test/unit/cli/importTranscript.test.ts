// importTranscript and the HTTP client (clients/) against an in-memory fake of the gateway (injected fetch).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, getStatus, listCompactions, search } from '../../../clients/httpClient.js';
import { type ImportProgress, importTranscript } from '../../../clients/importTranscript.js';
import { TranscriptError, transcriptHash } from '../../../clients/transcript.js';

interface Recorded {
  method: string;
  path: string;
  auth: string | null;
  body: any;
}

/** A fake gateway: records requests, dedupes messages by idempotency key, answers like the real routes. */
function fakeGateway(options: { failFirst?: number; failStatus?: number } = {}) {
  const requests: Recorded[] = [];
  const seen = new Set<string>();
  let failures = options.failFirst ?? 0;
  const status = () => ({ conversationId: 'c', activeMessages: seen.size, compressionCount: 0, contextTokens: 10 });
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    const headers = new Headers(init?.headers);
    requests.push({
      method: init?.method ?? 'GET',
      path: url.pathname + url.search,
      auth: headers.get('authorization'),
      body,
    });
    const json = (code: number, value: unknown) =>
      new Response(JSON.stringify(value), { status: code, headers: { 'content-type': 'application/json' } });
    if (headers.get('authorization') !== 'Bearer dctx_good') {
      return json(401, { error: 'Unauthorized', message: 'invalid API key', statusCode: 401 });
    }
    if (failures > 0 && url.pathname.endsWith('/messages')) {
      failures--;
      return json(options.failStatus ?? 503, { error: 'Service Unavailable', message: 'try again', statusCode: 503 });
    }
    if (url.pathname === '/v1/conversations')
      return json(201, { conversationId: body.conversationId, status: status() });
    if (url.pathname.endsWith('/messages')) {
      for (const m of body.messages) seen.add(m.idempotencyKey);
      return body.wait
        ? json(200, { accepted: body.messages.length, status: status() })
        : json(202, { accepted: body.messages.length });
    }
    if (url.pathname.endsWith('/status')) return json(200, status());
    if (url.pathname === '/v1/search')
      return new Response('<html>oops</html>', { status: 502, statusText: 'Bad Gateway' });
    return json(404, { error: 'Not Found', message: `no route ${url.pathname}`, statusCode: 404 });
  }) as typeof fetch;
  return { fetch: fetchImpl, requests, seen };
}

let dir: string;
let file: string;
let text: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dctx-import-'));
  file = join(dir, 'session.jsonl');
  const lines = [
    { role: 'user', content: 'Please fix the failing tests.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'run_command', arguments: '{"command":"npm test"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', name: 'run_command', content: 'FAIL test/money.test.ts' },
    { message: { role: 'assistant', content: 'The rounding is off.' }, usage: { prompt_tokens: 2100 } },
    { role: 'user', content: 'Go ahead.' },
    { role: 'assistant', content: 'Fixed.' },
  ];
  text = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
  await writeFile(file, text);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('importTranscript', () => {
  it('creates the conversation, posts the batches in order with file-hash keys and waits on the last one', async () => {
    const gw = fakeGateway();
    const progress: ImportProgress[] = [];
    const result = await importTranscript({
      url: 'http://gw.test/',
      key: 'dctx_good',
      file,
      conversationId: 'conv-1',
      model: 'demo-128k',
      contextLength: 128_000,
      fetch: gw.fetch,
      onProgress: (p) => progress.push(p),
    });
    const hash = transcriptHash(text);
    expect(result).toMatchObject({ conversationId: 'conv-1', hash, messages: 6, batches: 2 });
    expect(result.status).toMatchObject({ activeMessages: 6 });
    expect(gw.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/conversations',
      'POST /v1/conversations/conv-1/messages',
      'POST /v1/conversations/conv-1/messages',
    ]);
    expect(gw.requests[0]?.body).toEqual({
      conversationId: 'conv-1',
      model: 'demo-128k',
      contextLength: 128_000,
      source: 'import',
      title: 'session.jsonl',
    });
    const posts = gw.requests.slice(1).map((r) => r.body);
    expect(posts.map((b) => b.messages.map((m: any) => m.idempotencyKey))).toEqual([
      [`${hash}:1`, `${hash}:2`, `${hash}:3`, `${hash}:4`],
      [`${hash}:5`, `${hash}:6`],
    ]);
    expect(posts[0].usage).toEqual({ prompt_tokens: 2100 });
    expect(posts[1].usage).toBeUndefined();
    expect(posts.map((b) => b.wait)).toEqual([undefined, true]);
    expect(progress.at(-1)).toEqual({
      sentMessages: 6,
      totalMessages: 6,
      sentBatches: 2,
      totalBatches: 2,
      waiting: false,
    });
    expect(progress.some((p) => p.waiting)).toBe(true);
  });

  it('derives the conversation id from the file, so a re-import sends the same keys to the same conversation', async () => {
    const gw = fakeGateway();
    const first = await importTranscript({ url: 'http://gw.test', key: 'dctx_good', file, fetch: gw.fetch });
    const second = await importTranscript({ url: 'http://gw.test', key: 'dctx_good', file, fetch: gw.fetch });
    expect(second.conversationId).toBe(first.conversationId);
    expect(first.conversationId).toMatch(/^session-[0-9a-f]{12}$/);
    expect(gw.seen.size).toBe(6);
    expect(second.status.activeMessages).toBe(6);
  });

  it('retries a batch on 503 (the keys make the resend harmless) and gives up on 4xx', async () => {
    const flaky = fakeGateway({ failFirst: 2 });
    const ok = await importTranscript({
      url: 'http://gw.test',
      key: 'dctx_good',
      file,
      fetch: flaky.fetch,
      conversationId: 'c',
    });
    expect(ok.messages).toBe(6);
    expect(flaky.seen.size).toBe(6);

    const bad = fakeGateway({ failFirst: 1, failStatus: 400 });
    await expect(importTranscript({ url: 'http://gw.test', key: 'dctx_good', file, fetch: bad.fetch })).rejects.toThrow(
      'try again',
    );
  });

  it("surfaces the gateway's message (bad key) as a GatewayError", async () => {
    const gw = fakeGateway();
    const err = await importTranscript({ url: 'http://gw.test', key: 'dctx_bad', file, fetch: gw.fetch }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ statusCode: 401, message: 'invalid API key' });
  });

  it('rejects a bad transcript before sending anything', async () => {
    const bad = join(dir, 'bad.jsonl');
    await writeFile(
      bad,
      `${JSON.stringify({ role: 'user', content: 'hi' })}\n{"role": "assistant", "content": oops}\n`,
    );
    const gw = fakeGateway();
    const err = await importTranscript({ url: 'http://gw.test', key: 'dctx_good', file: bad, fetch: gw.fetch }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(TranscriptError);
    expect(err.message).toMatch(/^bad\.jsonl:2: invalid JSON/);
    expect(gw.requests).toEqual([]);

    const empty = join(dir, 'empty.jsonl');
    await writeFile(empty, '\n');
    await expect(
      importTranscript({ url: 'http://gw.test', key: 'dctx_good', file: empty, fetch: gw.fetch }),
    ).rejects.toThrow('empty.jsonl: no messages to import');
  });
});

describe('HTTP client', () => {
  it('builds query strings and reports non-JSON errors by status', async () => {
    const gw = fakeGateway();
    const conn = { url: 'http://gw.test', key: 'dctx_good', fetch: gw.fetch };
    await expect(search(conn, 'a b', { roles: ['user', 'tool'], limit: 5 })).rejects.toMatchObject({
      statusCode: 502,
      message: 'HTTP 502 Bad Gateway',
    });
    expect(gw.requests[0]?.path).toBe('/v1/search?q=a+b&roles=user%2Ctool&limit=5');
    await expect(listCompactions(conn, { status: ['fallback', 'failed'] })).rejects.toThrow('no route /v1/compactions');
    expect(gw.requests[1]?.path).toBe('/v1/compactions?status=fallback%2Cfailed');
    expect(await getStatus(conn, 'conv/1')).toMatchObject({ conversationId: 'c' });
    expect(gw.requests[2]?.path).toBe('/v1/conversations/conv%2F1/status');
  });

  it('says when the gateway cannot be reached', async () => {
    const refused = (async () => {
      throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    }) as typeof fetch;
    const err = await getStatus({ url: 'http://127.0.0.1:9', key: 'k', fetch: refused }, 'c').catch((e) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err.statusCode).toBe(0);
    expect(err.message).toBe(
      'cannot reach the gateway at http://127.0.0.1:9 (ECONNREFUSED); is it running? (dctx start)',
    );
  });
});
