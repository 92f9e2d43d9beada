// bench:load's open loop (bench/load/ingest.ts runOffered): batches are due at a fixed rate whatever the answers, a
// batch's latency counts from when it was due (a wait for a connection or for its conversation included: no
// coordinated omission), and a conversation never has two requests in flight, so its batches arrive in order.
// Against a real node:http server on a free port that answers after a fixed delay.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonHttp } from '../../../bench/load/http.js';
import { type IngestTarget, runOffered } from '../../../bench/load/ingest.js';
import { ConversationScript } from '../../../bench/load/messages.js';

interface Seen {
  conversation: string;
  batch: number;
  inFlightForConversation: number;
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A server that answers every POST …/messages with 202 after `delayMs`, recording what arrived. */
async function slowServer(delayMs: number): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const inFlight = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const conversation = /\/v1\/conversations\/([^/]+)\/messages$/.exec(req.url ?? '')?.[1] ?? '?';
      const current = (inFlight.get(conversation) ?? 0) + 1;
      inFlight.set(conversation, current);
      const key: string = JSON.parse(body).messages[0].idempotencyKey;
      seen.push({ conversation, batch: Number(key.split(':')[2]), inFlightForConversation: current });
      setTimeout(() => {
        inFlight.set(conversation, (inFlight.get(conversation) ?? 1) - 1);
        res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ stored: 2 }));
      }, delayMs);
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function targets(count: number): IngestTarget[] {
  return Array.from({ length: count }, (_, index) => {
    const id = `c${index}`;
    return {
      conversation: { id, index, tenant: { id: 't', key: 'k' }, thresholdTokens: 0 },
      script: new ConversationScript(id, index + 1, { runId: 'r', thresholdTokens: 150_000, compact: false }),
    };
  });
}

/** `seconds` of batches due at `batchesPerSecond` over `conversations`, through at most `sockets` connections. */
async function offer(url: string, sockets: number, conversations: number, batchesPerSecond: number, seconds: number) {
  const client = new JsonHttp(url, sockets);
  try {
    const observer = { accepted: () => {}, failed: () => {} };
    const common = { timeoutMs: 10_000, retries: 0, observer };
    return await runOffered({ http: client, targets: targets(conversations), batchesPerSecond, seconds, ...common });
  } finally {
    client.close();
  }
}

describe('bench:load open loop', () => {
  it('counts a batch from when it was due, so the wait for a connection is in its latency', async () => {
    const { url, seen } = await slowServer(40);
    const result = await offer(url, 1, 50, 100, 0.2);
    // 20 batches due within 0.2 s over one connection answering in 40 ms: the last waits behind 19 others.
    expect(seen).toHaveLength(20);
    expect(result.acceptedBatches).toBe(20);
    expect(result.acceptedMessages).toBe(40);
    const sorted = [...result.latencies].sort((a, b) => a - b);
    expect(sorted[0]).toBeGreaterThanOrEqual(39);
    // A closed loop would see ~40 ms for each; from when due, the last is ≥ 20 × 40 ms − 0.2 s late.
    expect(sorted.at(-1)).toBeGreaterThan(550);
    expect(result.seconds).toBeGreaterThan(0.75);
  });

  it('keeps one request in flight per conversation, its batches in order, and says when one had to wait', async () => {
    const { url, seen } = await slowServer(30);
    const result = await offer(url, 8, 2, 200, 0.1);
    expect(result.acceptedBatches).toBe(20);
    expect(result.lateForConversation).toBe(18);
    expect(Math.max(...seen.map((s) => s.inFlightForConversation))).toBe(1);
    for (const conversation of ['c0', 'c1']) {
      const batches = seen.filter((s) => s.conversation === conversation).map((s) => s.batch);
      expect(batches).toEqual(Array.from({ length: batches.length }, (_, i) => i + 1));
    }
    expect(seen.filter((s) => s.conversation === 'c0').length).toBeGreaterThanOrEqual(5);
    // 20 batches due within 0.1 s, two conversations answering in 30 ms each: the last waited ~10 × 30 ms − 0.1 s
    // for its conversation, and that wait is in its latency.
    expect(Math.max(...result.latencies)).toBeGreaterThan(150);
  });
});
