// Plain batches posted over HTTP while the gateway's only write slot is busy (infra/db/appendGroups.ts, issue #11 §1):
// several tenants' conversations posting at once share transactions, and what a client sees is what it
// would see alone — every 202 counts its batch, each conversation's messages are in its posting order, duplicates are
// duplicates, the workflow decides on every batch (its applied position covers them all), and a tenant finds only
// its own messages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../../infra/metrics/registry.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';

const groups = createMetrics({ defaultMetrics: false });
let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness({
    stack: { conversations: { writeConnections: 1, appendMetrics: groups } },
  });
});
afterAll(async () => {
  await gw?.close();
});

const batch = (conversation: number, n: number) =>
  [0, 1].map((i) => ({
    message: { role: i === 0 ? 'user' : 'assistant', content: `c${conversation} batch ${n} message ${i}` },
    idempotencyKey: `b${n}:${i}`,
  }));

describe('plain batches posted at once', () => {
  it('are committed in shared transactions, and each client sees its batch as if alone', async () => {
    const tenants = [await gw.tenant(), await gw.tenant()];
    const conversations = await Promise.all(
      Array.from({ length: 8 }, async (_, index) => {
        const { key } = tenants[index % 2]!;
        const created = await gw.call('POST', '/v1/conversations', key, {});
        return { key, id: created.json.conversationId as string, index };
      }),
    );
    // Each conversation posts three batches one after another (the third twice: a retry), all conversations at once.
    const answers = await Promise.all(
      conversations.map(async ({ key, id, index }) => {
        const posted = [];
        for (const n of [0, 1, 2, 2]) {
          posted.push(await gw.call('POST', `/v1/conversations/${id}/messages`, key, { messages: batch(index, n) }));
        }
        return posted;
      }),
    );
    for (const posted of answers) {
      expect(posted.map((p) => p.status)).toEqual([202, 202, 202, 202]);
      expect(posted.map((p) => p.json)).toEqual([
        { accepted: 2, stored: 2, duplicates: 0 },
        { accepted: 2, stored: 2, duplicates: 0 },
        { accepted: 2, stored: 2, duplicates: 0 },
        { accepted: 2, stored: 0, duplicates: 2 },
      ]);
    }
    // Shared transactions happened: fewer transactions than batches.
    const values = (await groups.appendGroupBatches.get()).values;
    const count = values.find((v) => v.metricName === 'dctx_append_group_batches_count')?.value ?? 0;
    const sum = values.find((v) => v.metricName === 'dctx_append_group_batches_sum')?.value ?? 0;
    expect(sum).toBe(32);
    expect(count).toBeLessThan(32);
    // None of them failed (a lock another writer held a while, the workflow publishing, may roll one back).
    const dissolved = (await groups.appendGroupsDissolved.get()).values;
    expect(dissolved.filter((v) => v.labels.reason === 'error')).toEqual([]);
    for (const { key, id, index } of conversations) {
      const listed = await gw.call('GET', `/v1/conversations/${id}/messages`, key);
      expect(listed.json.messages.map((m: any) => m.message.content)).toEqual(
        [0, 1, 2].flatMap((n) => batch(index, n).map((item) => item.message.content)),
      );
      // The workflow has decided on all three: the prepared context waits for it, the status then says so.
      const context = await gw.call('GET', `/v1/conversations/${id}/context`, key);
      expect(context.status, context.text).toBe(200);
      const status = await gw.call('GET', `/v1/conversations/${id}/status`, key);
      expect(status.json).toMatchObject({ activeMessages: 6, appliedSeq: 3 });
    }
    // A tenant finds its own conversations' messages, and never the other's.
    const search = JSON.stringify((await gw.call('GET', '/v1/search?q=batch&limit=100', tenants[0]!.key)).json);
    for (const { index } of conversations) {
      expect(search.includes(`c${index} batch`)).toBe(index % 2 === 0);
    }
  });
});
