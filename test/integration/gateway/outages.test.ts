// Outages on the real services (issue #9 §6): reads never need the worker; what needs the workflow waits a bounded
// time and answers 503 with Retry-After; while PostgreSQL or Temporal is unreachable the gateway answers 503 naming
// it — never 500 — and nothing accepted is lost.
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationClient } from '../../../clients/conversationClient.js';
import { createDb } from '../../../infra/db/connect.js';
import type { Database } from '../../../infra/db/schema.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { freePort } from '../../../infra/temporal/devServer.js';
import { buildGateway } from '../../../workers/gateway/app.js';
import { Conversations } from '../../../workers/gateway/conversations.js';
import { conversationWorkflowId } from '../../../workflows/ids.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { allRows } from '../workflows/transcript.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness({ stack: { acceptWithinMs: 2_000, conversations: { waitTimeoutMs: 2_000 } } });
});
afterAll(async () => {
  await gw?.close();
});

const message = (content: string, idempotencyKey: string) => ({ message: { role: 'user', content }, idempotencyKey });

/** A second gateway on the harness's database and Temporal, with its own pool / Temporal connection. */
async function extraGateway(options: {
  db?: Kysely<Database>;
  temporalAddress?: string;
}): Promise<{ url: string; app: FastifyInstance }> {
  const connection = options.temporalAddress
    ? Connection.lazy({ address: options.temporalAddress, connectTimeout: '2 seconds' })
    : gw.stack.connection;
  const temporal = new ConversationClient(connection, { taskQueue: gw.stack.taskQueue, callTimeoutMs: 2_000 });
  const db = options.db ?? gw.testDb.db;
  const app = await buildGateway({
    db,
    conversations: new Conversations(db, temporal, { waitTimeoutMs: 2_000 }),
    metrics: createMetrics({ defaultMetrics: false }),
    adminKey: null,
    cacheTtl: '5m',
    defaultModel: { model: 'acme-chat', provider: null, contextLength: 200_000 },
  });
  return { url: await app.listen({ port: 0, host: '127.0.0.1' }), app };
}

async function request(url: string, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null, retryAfter: res.headers.get('retry-after') };
}

describe('the worker is down', () => {
  it('reads answer from PostgreSQL; waits end in 503 with Retry-After; the worker catches up when it is back', async () => {
    const { key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [message('before', 'm0')],
      wait: true,
    });
    await gw.stack.stopWorker();
    try {
      // A batch that needs no decision (engine/quietBatches.ts) is decided on at commit: status and prepared
      // context answer without the worker.
      const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
        messages: [message('during', 'm1')],
      });
      expect(posted.status).toBe(202);
      const status = await gw.call('GET', `/v1/conversations/${conv}/status`, key);
      expect(status.status).toBe(200);
      expect(status.json).toMatchObject({ activeMessages: 2, batchSeq: 2, appliedSeq: 2, published: true });
      const messages = await gw.call('GET', `/v1/conversations/${conv}/messages`, key);
      expect(messages.json.messages.map((m: any) => m.message.content)).toEqual(['before', 'during']);
      const quietContext = await gw.call('GET', `/v1/conversations/${conv}/context`, key);
      expect(quietContext.status, quietContext.text).toBe(200);
      expect(quietContext.json.messages.map((m: any) => m.content)).toEqual(['before', 'during']);
      // A usage reading over the threshold needs the workflow's post-response check: waits end in 503.
      const reading = {
        messages: [{ message: { role: 'assistant', content: 'waiting' }, idempotencyKey: 'm2' }],
        usage: { prompt_tokens: 150_000, completion_tokens: 10, total_tokens: 150_010 },
      };
      for (const [method, path, body] of [
        ['POST', `/v1/conversations/${conv}/messages`, { ...reading, wait: true }],
        ['GET', `/v1/conversations/${conv}/context`, undefined],
        ['POST', `/v1/conversations/${conv}/compact`, {}],
      ] as const) {
        const res = await gw.call(method, path, key, body);
        expect(res.status, `${method} ${path}: ${res.text}`).toBe(503);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(res.json.message).toMatch(/worker|Temporal/);
      }
      expect((await gw.call('GET', `/v1/conversations/${conv}/status`, key)).json).toMatchObject({
        batchSeq: 3,
        appliedSeq: 2,
      });
    } finally {
      await gw.stack.startWorker();
    }
    // As a client does: a 503 is retried after Retry-After with the same idempotency key. The restarted worker takes
    // over the conversation within a few waits (more on a loaded machine); the batch is stored once either way.
    let caughtUp = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [message('after', 'm3')],
      wait: true,
    });
    for (let retries = 0; caughtUp.status === 503 && retries < 15; retries++) {
      await new Promise((resolve) => setTimeout(resolve, Number(caughtUp.headers.get('retry-after')) * 1000));
      caughtUp = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
        messages: [message('after', 'm3')],
        wait: true,
      });
    }
    expect(caughtUp.status, caughtUp.text).toBe(200);
    expect(caughtUp.json.status).toMatchObject({ activeMessages: 4, batchSeq: 4, appliedSeq: 4 });
    const context = await gw.call('GET', `/v1/conversations/${conv}/context`, key);
    expect(context.json.messages.map((m: any) => m.content)).toEqual(['before', 'during', 'waiting', 'after']);
  });
});

describe('reads never write to Temporal history (issue #11 §3)', () => {
  /** Every read route of one conversation, as a dashboard polls them. */
  const readsOf = (conv: string) => [
    `/v1/conversations/${conv}/status`,
    `/v1/conversations/${conv}/messages`,
    `/v1/conversations/${conv}/messages?archived=true`,
    `/v1/conversations/${conv}/context`,
    '/v1/search?q=quietly',
    '/v1/compactions',
  ];
  const workflowOf = async (tenantId: string, conv: string) =>
    new Client({ connection: gw.stack.connection }).workflow.getHandle(conversationWorkflowId(tenantId, conv));

  it('a conversation whose batches were all decided at commit: reads answer with the worker down, start nothing', async () => {
    const { id, key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [message('quietly stored', 'q0'), message('quietly kept', 'q1')],
    });
    expect(posted.status).toBe(202);
    await gw.stack.stopWorker();
    try {
      for (const path of readsOf(conv)) {
        const res = await gw.call('GET', path, key);
        expect(res.status, `${path}: ${res.text}`).toBe(200);
      }
      const context = await gw.call('GET', `/v1/conversations/${conv}/context`, key);
      expect(context.json.messages.map((m: any) => m.content)).toEqual(['quietly stored', 'quietly kept']);
      const hits = await gw.call('GET', '/v1/search?q=quietly', key);
      expect(hits.json.results).toHaveLength(2);
      // No workflow was started for it: there is no history to write to.
      const describe = (await workflowOf(id, conv)).describe();
      await expect(describe).rejects.toBeInstanceOf(WorkflowNotFoundError);
    } finally {
      await gw.stack.startWorker();
    }
  });

  it('a running conversation: its history is not one event longer after every read', async () => {
    const { id, key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    await gw.call('POST', `/v1/conversations/${conv}/messages`, key, { messages: [message('quietly asked', 'r0')] });
    // A manual compaction starts the workflow and blocks until it is decided; then the workflow is idle.
    expect((await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {})).status).toBe(200);
    const handle = await workflowOf(id, conv);
    const length = async () => (await handle.fetchHistory()).events?.length ?? 0;
    // Idle: the workflow task after the update (its publication) has completed.
    let before = await length();
    for (let settled = false; !settled; ) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const now = await length();
      settled = now === before;
      before = now;
    }
    expect(before).toBeGreaterThan(0);
    for (let round = 0; round < 3; round++) {
      for (const path of readsOf(conv)) {
        const res = await gw.call('GET', path, key);
        expect(res.status, `${path}: ${res.text}`).toBe(200);
      }
    }
    expect((await handle.fetchHistory()).events?.length ?? 0).toBe(before);
  });
});

/** A TCP proxy to PostgreSQL that can be cut (every connection dropped, new ones refused) and restored. */
async function pgProxy(
  target: URL,
): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  const open = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const shut = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await open();
  const url = new URL(target.toString());
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), cut: shut, restore: open, close: shut };
}

describe('PostgreSQL is unreachable for a while', () => {
  it('requests get 503 naming the database, never 500; everything answered 202 is stored exactly once', async () => {
    const { id: tenantId, key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    const proxy = await pgProxy(new URL(gw.testDb.url));
    const db = createDb({ connectionString: proxy.url, maxConnections: 4 });
    const extra = await extraGateway({ db });
    try {
      const accepted: string[] = [];
      const statuses: number[] = [];
      const send = async (i: number) => {
        const res = await request(extra.url, 'POST', `/v1/conversations/${conv}/messages`, key, {
          messages: [message(`message ${i}`, `k${i}`)],
        });
        statuses.push(res.status);
        if (res.status === 202) accepted.push(`k${i}`);
        else {
          expect(res.status).toBe(503);
          expect(res.json.message).toMatch(/PostgreSQL/);
          expect(Number(res.retryAfter)).toBeGreaterThan(0);
        }
        const status = await request(extra.url, 'GET', `/v1/conversations/${conv}/status`, key);
        statuses.push(status.status);
        expect([200, 503]).toContain(status.status);
      };
      for (let i = 0; i < 5; i++) await send(i);
      await proxy.cut();
      for (let i = 5; i < 10; i++) await send(i);
      await proxy.restore();
      for (let i = 10; i < 15; i++) await send(i);
      expect(statuses).not.toContain(500);
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(5);
      expect(accepted.length).toBeGreaterThanOrEqual(10);
      const rows = await allRows(gw.testDb.db, tenantId);
      const stored = rows.map((r) => r.content);
      for (const k of accepted) expect(stored.filter((c) => c === `message ${k.slice(1)}`)).toHaveLength(1);
    } finally {
      await extra.app.close();
      await db.destroy();
      await proxy.close();
    }
  });
});

describe('Temporal is unreachable', () => {
  it('writes are stored and answered 503 naming Temporal; reads from PostgreSQL still answer', async () => {
    const { id: tenantId, key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    const extra = await extraGateway({ temporalAddress: `127.0.0.1:${await freePort()}` });
    try {
      // A batch that needs no decision is accepted without Temporal (quiet batches, engine/quietBatches.ts).
      expect((await gw.call('GET', `/v1/conversations/${conv}/context`, key)).status).toBe(200);
      const quiet = await request(extra.url, 'POST', `/v1/conversations/${conv}/messages`, key, {
        messages: [message('while Temporal is away', 'away')],
      });
      expect(quiet.status, JSON.stringify(quiet.json)).toBe(202);
      // A reading over the threshold needs the workflow: stored, then 503 naming Temporal.
      const reading = {
        messages: [{ message: { role: 'assistant', content: 'a long answer' }, idempotencyKey: 'reading' }],
        usage: { prompt_tokens: 190_000, completion_tokens: 10, total_tokens: 190_010 },
      };
      const posted = await request(extra.url, 'POST', `/v1/conversations/${conv}/messages`, key, reading);
      expect(posted.status).toBe(503);
      expect(posted.json.message).toMatch(/Temporal is unavailable/);
      expect(posted.json.message).toMatch(/stored/);
      expect(Number(posted.retryAfter)).toBeGreaterThan(0);
      const created = await request(extra.url, 'POST', '/v1/conversations', key, { conversationId: randomUUID() });
      expect(created.status).toBe(503);
      const status = await request(extra.url, 'GET', `/v1/conversations/${conv}/status`, key);
      expect(status.status).toBe(200);
      expect(status.json).toMatchObject({ batchSeq: 2, appliedSeq: 1 });
      const messages = await request(extra.url, 'GET', `/v1/conversations/${conv}/messages`, key);
      expect(messages.json.messages.map((m: any) => m.message.content)).toEqual([
        'while Temporal is away',
        'a long answer',
      ]);
      // The client's retry through a gateway that reaches Temporal: a duplicate that notifies the workflow, which
      // learns that batch 2 exists and (its own notification having been lost) counts it applied after a short wait.
      const retried = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, reading);
      expect(retried.json).toEqual({ accepted: 1, stored: 0, duplicates: 1 });
      let applied = 0;
      for (let i = 0; i < 150 && applied < 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        applied = (await gw.call('GET', `/v1/conversations/${conv}/status`, key)).json.appliedSeq;
      }
      expect(applied).toBe(2);
      expect((await allRows(gw.testDb.db, tenantId)).length).toBe(2);
    } finally {
      await extra.app.close();
    }
  });
});
