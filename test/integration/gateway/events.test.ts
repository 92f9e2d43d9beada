// The tenant's event feed (issue #14 §2, SPEC §13.5) on the real services: `GET /v1/events` as Server-Sent Events —
// the compaction lifecycle (started, completed, failed) written by the database with the record, `session:compress`
// with exactly SPEC §13.5's payload, the workflow's notices; resumed with Last-Event-ID (nothing missed, nothing
// twice), filtered by conversation, and never another tenant's.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTICE_MODEL_SWITCH } from '../../../engine/index.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness();
});
afterAll(async () => {
  await gw?.close();
});

interface Frame {
  id: number;
  event: string;
  data: Record<string, any>;
}

/** An open feed: the frames received so far, and a wait for the first frames matching a condition. */
function openFeed(key: string, query = '', lastEventId?: number) {
  const frames: Frame[] = [];
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId);
  const opened = fetch(`${gw.url}/v1/events${query}`, { headers, signal: abort.signal }).then(async (res) => {
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((line) => !line.startsWith(':'))
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
          );
          if (fields.event && fields.data) {
            frames.push({ id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data) });
          }
          end = buffer.indexOf('\n\n');
        }
      }
    } catch {
      // aborted by the test
    }
  });
  return {
    frames,
    async until(done: (frames: Frame[]) => boolean, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!done(frames)) {
        if (Date.now() > deadline)
          throw new Error(`feed: timed out with ${JSON.stringify(frames.map((f) => f.event))}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async close() {
      abort.abort();
      await opened.catch(() => undefined);
    },
  };
}

async function conversationWithHistory(key: string): Promise<string> {
  const created = await gw.call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
  const conv = created.json.conversationId as string;
  const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
    messages: keyed(agentTranscript(7, { toolOutputChars: 2_000 }), randomUUID()),
    wait: true,
  });
  expect(posted.status).toBe(200);
  return conv;
}

describe('GET /v1/events', () => {
  it('streams the compaction lifecycle, session:compress and notices; resumes with Last-Event-ID', async () => {
    const { key } = await gw.tenant();
    const other = await gw.tenant();
    const conv = await conversationWithHistory(key);
    const feed = openFeed(key);
    const foreign = openFeed(other.key);
    // Give both streams their start position (now) before anything happens.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const compacted = await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
    expect(compacted.json.status).toBe('committed');
    await gw.call('POST', `/v1/conversations/${conv}/model`, key, { model: 'acme-chat-2' });
    await feed.until((f) => f.some((x) => x.event === 'notice'));

    const kinds = feed.frames.map((f) => f.event);
    expect(kinds.slice(0, 3)).toEqual(['compaction:started', 'compaction:completed', 'session:compress']);
    const [started, completed, compress] = feed.frames;
    expect(started?.data).toMatchObject({
      type: 'compaction:started',
      conversation_id: conv,
      compaction_id: compacted.json.compactionId,
      payload: { trigger: 'manual', compaction_id: compacted.json.compactionId },
    });
    expect(completed?.data.payload).toMatchObject({ status: 'committed', trigger: 'manual', in_place: true });
    expect(completed?.data.payload.tokens_before).toBeGreaterThan(completed?.data.payload.tokens_after);
    // SPEC §13.5, exactly.
    expect(compress?.data.payload).toEqual({
      platform: 'api',
      session_id: compacted.json.sessionId,
      old_session_id: '',
      in_place: true,
      compression_count: 1,
    });
    expect(feed.frames.find((f) => f.event === 'notice')?.data.payload).toEqual({ text: NOTICE_MODEL_SWITCH });
    // Ids increase; the other tenant saw none of it.
    const ids = feed.frames.map((f) => f.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(foreign.frames).toEqual([]);

    // Reconnected after the first event: the rest, once each, nothing before it.
    const resumed = openFeed(key, '', started?.id);
    await resumed.until((f) => f.length >= feed.frames.length - 1);
    expect(resumed.frames.map((f) => f.id)).toEqual(ids.slice(1));
    await Promise.all([feed.close(), foreign.close(), resumed.close()]);
  });

  it('filters by conversation; a compaction that ends without a commit is compaction:failed', async () => {
    const { key } = await gw.tenant();
    const conv = await conversationWithHistory(key);
    const created = await gw.call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
    const short = created.json.conversationId as string;
    await gw.call('POST', `/v1/conversations/${short}/messages`, key, {
      messages: keyed([{ role: 'user', content: 'hi' }], randomUUID()),
      wait: true,
    });
    const feed = openFeed(key, `?conversationId=${short}&after=0`);
    const noop = await gw.call('POST', `/v1/conversations/${short}/compact`, key, {});
    expect(noop.json.status).toBe('noop');
    await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
    await feed.until((f) => f.some((x) => x.event === 'compaction:failed'));
    await new Promise((resolve) => setTimeout(resolve, 800)); // a frame of the other conversation would be here now
    expect(feed.frames.every((f) => f.data.conversation_id === short)).toBe(true);
    expect(feed.frames.find((f) => f.event === 'compaction:failed')?.data.payload).toMatchObject({ status: 'noop' });
    const bad = await fetch(`${gw.url}/v1/events`, {
      headers: { authorization: `Bearer ${key}`, 'last-event-id': 'x' },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain('Last-Event-ID');
    await feed.close();
  });

  it("an open feed holds no slot of max_concurrent: the tenant's other requests go on", async () => {
    const { key } = await gw.tenant({ limits: { max_concurrent: 1 } });
    const feed = openFeed(key);
    const other = openFeed(key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const listed = await gw.call('GET', '/v1/compactions', key);
    expect(listed.status).toBe(200);
    await Promise.all([feed.close(), other.close()]);
  });
});
