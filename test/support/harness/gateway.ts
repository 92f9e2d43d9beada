// A gateway on a loopback port over a worker (test/support/harness/temporal.ts) and a per-file database: the HTTP API as a
// client sees it, for the e2e tests of the gateway and the CLI.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { inject } from 'vitest';
import type { Summarizer } from '../../../engine/index.js';
import { KeyCache } from '../../../infra/db/keyCache.js';
import { TurnTextListener } from '../../../infra/db/turnText.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { buildGateway, type GatewayDeps } from '../../../workers/gateway/app.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import type { StackAtOptions } from './stackAt.js';
import { createTestStack, type TestStack } from './temporal.js';

export interface HttpResult {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

export interface GatewayHarness {
  url: string;
  adminKey: string;
  app: FastifyInstance;
  testDb: TestDatabase;
  stack: TestStack;
  /** The tenant keys the gateway keeps (infra/db/keyCache.ts). */
  keys: KeyCache;
  /** Creates a tenant (optionally with a policy) and returns one of its API keys. */
  tenant(policy?: Record<string, unknown>): Promise<{ id: string; key: string }>;
  /** One HTTP request: a JSON body (or raw text), the key as bearer, extra headers. */
  call(
    method: string,
    path: string,
    key: string | null,
    body?: unknown,
    options?: { raw?: string; headers?: Record<string, string> },
  ): Promise<HttpResult>;
  /** Another gateway on the same database and worker, with other settings (not listening: use `inject`). */
  another(settings: Partial<GatewayDeps>): Promise<FastifyInstance>;
  close(): Promise<void>;
}

async function call(
  base: string,
  method: string,
  path: string,
  key: string | null,
  body?: unknown,
  options: { raw?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
  Object.assign(headers, options.headers);
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.raw !== undefined ? { body: options.raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json, text, headers: res.headers };
}

export async function startGatewayHarness(
  options: {
    summarizer?: Summarizer | null;
    bodyLimit?: number;
    requestTimeoutMs?: number;
    stack?: Omit<StackAtOptions, 'address' | 'namespace' | 'db'>;
    /** Gateway settings of the operator's (keys, limits, CORS), as workers/gateway.ts passes them from env.ts. */
    gateway?: Pick<GatewayDeps, 'previousAdminKey' | 'docsKey' | 'corsOrigins' | 'limits' | 'webhooksAllowPrivate'>;
  } = {},
): Promise<GatewayHarness> {
  const testDb = await createTestDatabase(inject('databaseUrl'));
  const metrics = createMetrics({ db: testDb.db, defaultMetrics: false });
  // As in production (workers/gateway.ts): streamed turns the worker runs are heard over LISTEN/NOTIFY.
  const turnText = new TurnTextListener(testDb.url);
  // As in production: the tenant keys resolved are kept while PostgreSQL notifies of changes (infra/db/keyCache.ts).
  const keys = new KeyCache(testDb.url);
  await keys.start();
  // Webhook receivers in tests listen on loopback (infra/http/webhookDestination.ts refuses it by default).
  const allowPrivate = options.gateway?.webhooksAllowPrivate ?? true;
  const stack = await createTestStack({
    summarizer: options.summarizer ?? null,
    metrics,
    ...options.stack,
    activityDeps: { webhooksAllowPrivate: allowPrivate, ...options.stack?.activityDeps },
    conversations: { turnText, ...options.stack?.conversations },
    db: testDb.db,
  });
  const adminKey = `admin-${randomUUID()}`;
  const app = await buildGateway({
    db: testDb.db,
    conversations: stack.client,
    metrics,
    adminKey,
    cacheTtl: options.stack?.activityDeps?.cacheTtl === undefined ? '5m' : options.stack.activityDeps.cacheTtl,
    providers: options.stack?.activityDeps?.providers ?? null,
    ...(options.stack?.activityDeps?.env ? { env: options.stack.activityDeps.env } : {}),
    defaultModel: { model: 'acme-chat', provider: null, contextLength: 200_000 },
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    ...(options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {}),
    keys,
    ...options.gateway,
    webhooksAllowPrivate: allowPrivate,
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const harness: GatewayHarness = {
    url: address,
    adminKey,
    app,
    testDb,
    stack,
    keys,
    async tenant(policy) {
      const id = `t-${randomUUID().slice(0, 8)}`;
      const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
      const created = await fetch(`${address}/v1/tenants`, {
        method: 'POST',
        headers,
        body: JSON.stringify(policy ? { id, policy } : { id }),
      });
      if (created.status !== 201) throw new Error(`tenant create failed: ${created.status} ${await created.text()}`);
      const issued = await fetch(`${address}/v1/tenants/${id}/keys`, { method: 'POST', headers, body: '{}' });
      if (issued.status !== 201) throw new Error(`key issue failed: ${issued.status} ${await issued.text()}`);
      const { key } = (await issued.json()) as { key: string };
      return { id, key };
    },
    call: (method, path, key, body, options) => call(address, method, path, key, body, options),
    another: (settings) =>
      buildGateway({
        db: testDb.db,
        conversations: stack.client,
        metrics: createMetrics({ defaultMetrics: false }),
        adminKey: null,
        cacheTtl: '5m',
        defaultModel: { model: 'acme-chat', provider: null, contextLength: 200_000 },
        ...settings,
      }),
    async close() {
      await app.close();
      await turnText.close();
      await keys.close();
      await stack.close();
      await testDb.drop();
    },
  };
  return harness;
}
