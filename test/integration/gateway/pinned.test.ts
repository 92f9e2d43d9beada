// Pinned messages (SPEC §19 `rehydrate_pinned`) over HTTP: an operator pins a message; a compaction that summarises
// it puts it back right after the summary when the tenant's key is on, and archives it like any other when it is off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness();
});
afterAll(async () => {
  await gw?.close();
});

/** A conversation of 8 agent rounds; its stored rows with ids. */
async function conversation(key: string) {
  const created = await gw.call('POST', '/v1/conversations', key, { model: 'acme-chat', contextLength: 200_000 });
  const conv = created.json.conversationId as string;
  const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
    messages: keyed(agentTranscript(8, { tag: 'pin' })),
    wait: true,
  });
  expect(posted.status).toBe(200);
  const listed = await gw.call('GET', `/v1/conversations/${conv}/messages`, key);
  return { conv, rows: listed.json.messages as Array<{ id: number; message: { role: string; content: unknown } }> };
}

const contents = (rows: Array<{ message: { content: unknown } }>) => rows.map((r) => r.message.content);

describe('pinned messages', () => {
  it('come back right after the summary with rehydrate_pinned, word for word; a pinned tool result does not', async () => {
    const { key } = await gw.tenant({ rehydrate_pinned: true, protect_first_n: 1, protect_last_n: 4 });
    const { conv, rows } = await conversation(key);
    const request = rows[5]!; // the user message of round 1, in the middle
    const toolResult = rows[7]!; // a tool result of round 1: never re-injected alone
    expect(request.message.role).toBe('user');
    expect(toolResult.message.role).toBe('tool');
    for (const row of [request, toolResult]) {
      const pinned = await gw.call('PUT', `/v1/conversations/${conv}/messages/${row.id}/pin`, key);
      expect(pinned.status).toBe(200);
      expect(pinned.json).toEqual({ messageId: row.id, pinned: true });
    }

    const compacted = await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
    expect(compacted.json.status).toBe('committed');
    const live = (await gw.call('GET', `/v1/conversations/${conv}/messages`, key)).json.messages as typeof rows &
      Array<{ pinned: boolean }>;
    const summaryAt = live.findIndex((r) => String(r.message.content).includes('[CONTEXT COMPACTION'));
    expect(summaryAt).toBeGreaterThan(0);
    expect(live[summaryAt + 1]).toMatchObject({ message: request.message, pinned: true });
    expect(contents(live)).not.toContain(toolResult.message.content);
    expect(contents(live).filter((c) => c === request.message.content)).toHaveLength(1);
  });

  it('are summarised like any other without it; unpin, unknown ids and other tenants', async () => {
    const { key } = await gw.tenant({ protect_first_n: 1, protect_last_n: 4 });
    const { conv, rows } = await conversation(key);
    const request = rows[5]!;
    expect((await gw.call('PUT', `/v1/conversations/${conv}/messages/${request.id}/pin`, key)).status).toBe(200);
    await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
    const live = (await gw.call('GET', `/v1/conversations/${conv}/messages`, key)).json.messages as typeof rows;
    expect(contents(live)).not.toContain(request.message.content);

    const unpinned = await gw.call('DELETE', `/v1/conversations/${conv}/messages/${request.id}/pin`, key);
    expect(unpinned.json).toEqual({ messageId: request.id, pinned: false });
    const archived = (await gw.call('GET', `/v1/conversations/${conv}/messages?archived=true`, key)).json
      .messages as Array<{ id: number; pinned: boolean }>;
    expect(archived.find((r) => r.id === request.id)?.pinned).toBe(false);

    expect((await gw.call('PUT', `/v1/conversations/${conv}/messages/999999999/pin`, key)).status).toBe(404);
    expect((await gw.call('PUT', `/v1/conversations/${conv}/messages/abc/pin`, key)).status).toBe(400);
    const other = await gw.tenant();
    expect((await gw.call('PUT', `/v1/conversations/${conv}/messages/${request.id}/pin`, other.key)).status).toBe(404);
  });
});
