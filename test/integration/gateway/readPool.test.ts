// The gateway's read pool (workers/gateway.ts, README "PostgreSQL"): authentication and reads (status, transcript,
// search) use their own connections, so they answer while every connection of the write pool is taken — by write
// transactions under load, here by transactions the test holds open until the reads have answered.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversationClient } from '../../../clients/conversationClient.js';
import { createDb } from '../../../infra/db/connect.js';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { buildGateway } from '../../../workers/gateway/app.js';
import { Conversations } from '../../../workers/gateway/conversations.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness();
});
afterAll(async () => {
  await gw?.close();
});

describe('the read pool', () => {
  it('answers reads while the write pool is exhausted', async () => {
    const { key } = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', key, {})).json.conversationId as string;
    const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
      messages: [{ message: { role: 'user', content: 'hello from the read pool test' }, idempotencyKey: 'k1' }],
      wait: true,
    });
    expect(posted.status, posted.text).toBe(200);

    const writes = createDb({ connectionString: gw.testDb.url, maxConnections: 2 });
    const reads = createDb({ connectionString: gw.testDb.url, maxConnections: 2 });
    const temporal = new ConversationClient(gw.stack.connection, { taskQueue: gw.stack.taskQueue });
    const app = await buildGateway({
      db: writes,
      readDb: reads,
      conversations: new Conversations(writes, temporal, { readDb: reads }),
      metrics: createMetrics({ defaultMetrics: false }),
      adminKey: null,
      cacheTtl: '5m',
      defaultModel: { model: 'acme-chat', provider: null, contextLength: 200_000 },
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Both write connections stay in open transactions until the reads below have answered.
    const holders = [0, 1].map(() =>
      writes.transaction().execute(async (tx) => {
        await sql`SELECT 1`.execute(tx);
        await held;
      }),
    );
    try {
      const get = async (path: string) => {
        const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });
        return { status: res.status, json: (await res.json()) as any };
      };
      const status = await get(`/v1/conversations/${conv}/status`);
      expect(status.status).toBe(200);
      expect(status.json).toMatchObject({ activeMessages: 1, appliedSeq: 1 });
      const messages = await get(`/v1/conversations/${conv}/messages`);
      expect(messages.json.messages.map((m: any) => m.message.content)).toEqual(['hello from the read pool test']);
      const search = await get('/v1/search?q=read%20pool');
      expect(search.status).toBe(200);
      expect(search.json.results.length).toBe(1);
    } finally {
      release();
      await Promise.all(holders);
      await app.close();
      await writes.destroy();
      await reads.destroy();
    }
  });
});
