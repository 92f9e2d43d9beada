// Webhooks (issue #14 §2) on the real services: a tenant registers an endpoint on loopback that fails its first
// deliveries; the events of a compaction reach it signed (HMAC-SHA256 over the timestamp and the body), in id order,
// each event at least once and here exactly once after Temporal's retries with backoff; the delivery status says what
// happened; a deleted endpoint's delivery workflow ends; another tenant's events never reach it.
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookWorkflowId } from '../../../workflows/ids.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  answered: number;
}

let gw: GatewayHarness;
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
/** The receiver answers 500 to this many requests first. */
let failFirst = 2;

beforeAll(async () => {
  gw = await startGatewayHarness();
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      const answered = failFirst > 0 ? 500 : 200;
      if (failFirst > 0) failFirst -= 1;
      received.push({ headers: request.headers, body, answered });
      response.writeHead(answered).end(answered === 200 ? 'ok' : 'not now');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  await gw?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

async function until(done: () => boolean | Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out; received ${received.length} request(s)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function compactOnce(key: string): Promise<string> {
  const created = await gw.call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
  const conv = created.json.conversationId as string;
  await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
    messages: keyed(agentTranscript(7, { toolOutputChars: 2_000 }), randomUUID()),
    wait: true,
  });
  const compacted = await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
  expect(compacted.json.status).toBe('committed');
  return conv;
}

describe('webhooks', () => {
  it('delivers the tenant’s events signed, in order, retried durably until the endpoint takes them', async () => {
    const { key } = await gw.tenant();
    const other = await gw.tenant();
    const bad = await gw.call('POST', '/v1/webhooks', key, { url: 'ftp://example.test/x' });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('url');
    const registered = await gw.call('POST', '/v1/webhooks', key, { url: receiverUrl, description: 'ops' });
    expect(registered.status, registered.text).toBe(201);
    const { id, secret } = registered.json as { id: string; secret: string };
    expect(secret).toMatch(/^whsec_/);

    await compactOnce(other.key); // another tenant's events: never sent here
    const conv = await compactOnce(key);
    const delivered = () => received.filter((r) => r.answered === 200);
    await until(() => delivered().length >= 3);

    // The first event failed twice (500) and was retried: three attempts, then delivered; the others once each.
    expect(received.slice(0, 3).map((r) => r.answered)).toEqual([500, 500, 200]);
    const firstId = received[0]?.headers['x-dctx-event-id'];
    expect(received.slice(0, 3).map((r) => r.headers['x-dctx-event-id'])).toEqual([firstId, firstId, firstId]);
    expect(received.slice(0, 3).map((r) => r.headers['x-dctx-delivery-attempt'])).toEqual(['1', '2', '3']);

    const bodies = delivered().map((r) => JSON.parse(r.body) as Record<string, any>);
    expect(bodies.slice(0, 3).map((b) => b.type)).toEqual([
      'compaction:started',
      'compaction:completed',
      'session:compress',
    ]);
    expect(bodies.every((b) => b.conversation_id === conv)).toBe(true);
    const ids = bodies.map((b) => b.id as number);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length); // de-duplicated by event id: each delivered once here
    for (const r of delivered()) {
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(r.headers['x-dctx-signature']));
      expect(match).not.toBeNull();
      const expected = createHmac('sha256', secret).update(`${match?.[1]}.${r.body}`).digest('hex');
      expect(match?.[2]).toBe(expected);
      expect(r.headers['x-dctx-event-type']).toBe(JSON.parse(r.body).type);
    }

    const deliveries = await gw.call('GET', `/v1/webhooks/${id}/deliveries`, key);
    const first = deliveries.json.deliveries.find((d: { eventId: number }) => String(d.eventId) === firstId);
    expect(first).toMatchObject({ status: 'delivered', attempts: 3, lastStatusCode: 200 });
    const listed = await gw.call('GET', '/v1/webhooks', key);
    expect(listed.json.webhooks).toEqual([expect.objectContaining({ id, url: receiverUrl, description: 'ops' })]);
    expect(JSON.stringify(listed.json)).not.toContain(secret);
    expect((await gw.call('GET', '/v1/webhooks', other.key)).json.webhooks).toEqual([]);

    // Deleted: the endpoint's delivery workflow ends; the endpoint is no longer listed.
    expect((await gw.call('DELETE', `/v1/webhooks/${id}`, key)).json).toEqual({ id, deleted: true });
    expect((await gw.call('DELETE', `/v1/webhooks/${id}`, key)).status).toBe(404);
    const tenantId = JSON.parse(delivered()[0]?.body ?? '{}').tenant_id as string;
    const handle = gw.stack.temporal.client.workflow.getHandle(webhookWorkflowId(tenantId, id));
    await until(async () => (await handle.describe()).status.name === 'COMPLETED', 30_000);
    expect((await gw.call('GET', '/v1/webhooks', key)).json.webhooks).toEqual([]);
  });

  it("refuses a destination inside the operator's networks unless the operator allows it, naming the field", async () => {
    const strict = await startGatewayHarness({ gateway: { webhooksAllowPrivate: false } });
    try {
      const { key } = await strict.tenant();
      for (const url of [receiverUrl, 'http://localhost:9/x', 'http://169.254.169.254/latest/meta-data']) {
        const refused = await strict.call('POST', '/v1/webhooks', key, { url });
        expect(refused.status).toBe(400);
        expect(refused.json.message).toMatch(/^body\.url resolves to \S+, a loopback, private or link-local address/);
      }
      expect((await strict.call('GET', '/v1/webhooks', key)).json.webhooks).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});
