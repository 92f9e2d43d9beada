// The history routes over HTTP (issue #14 §6 data lifecycle) on a real gateway, worker, PostgreSQL and Temporal: the
// tenant's conversations paged and filtered, the sessions of a rotated conversation (compression.in_place: false) and
// their messages, message pages with a cursor (the unpaged answer unchanged), and the streamed JSONL export of a
// compacted, rotated conversation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getConversation } from '../../../infra/db/conversations.js';
import { exportConversation } from '../../../workers/gateway/conversationExport.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGatewayHarness();
});
afterAll(async () => {
  await gw?.close();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Row {
  id: number;
  position: number;
  active: boolean;
  compacted: boolean;
  message: { role: string; content: unknown };
}

/** A conversation of 8 agent rounds, compacted once by the tenant's policy (rotated with in_place: false). */
async function compactedConversation(key: string, title: string) {
  const created = await gw.call('POST', '/v1/conversations', key, { title, model: 'acme-chat' });
  const conv = created.json.conversationId as string;
  const posted = await gw.call('POST', `/v1/conversations/${conv}/messages`, key, {
    messages: keyed(agentTranscript(8, { tag: 'history' })),
    wait: true,
  });
  expect(posted.status).toBe(200);
  const compacted = await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {});
  expect(compacted.json.status).toBe('committed');
  return { conv, compactionId: compacted.json.compactionId as string };
}

/** Every row of a message list, a page of `limit` at a time; the pages seen. */
async function allPages(key: string, path: string, limit: number) {
  const rows: Row[] = [];
  let pages = 0;
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await gw.call('GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, key);
    expect(page.status).toBe(200);
    expect(page.json.messages.length).toBeLessThanOrEqual(limit);
    rows.push(...page.json.messages);
    cursor = page.json.nextCursor;
    pages++;
  } while (cursor);
  return { rows, pages };
}

describe('sessions and messages of a rotated conversation', () => {
  it('lists both sessions with lineage, reads the ended one, pages with a cursor', async () => {
    const { key } = await gw.tenant({ in_place: false, protect_first_n: 1, protect_last_n: 4 });
    const { conv } = await compactedConversation(key, 'Rotated work');

    const listed = await gw.call('GET', `/v1/conversations/${conv}/sessions`, key);
    expect(listed.status).toBe(200);
    const [old, current] = listed.json.sessions;
    expect(listed.json.sessions).toHaveLength(2);
    expect(old).toMatchObject({ parentSessionId: null, endReason: 'compression', compressionCount: 0, current: false });
    expect(old.endedAt).toEqual(expect.any(String));
    expect(current).toMatchObject({ parentSessionId: old.sessionId, endReason: null, compressionCount: 1 });
    expect(current).toMatchObject({ current: true, sessionId: listed.json.currentSessionId, title: 'Rotated work #2' });

    // The ended session keeps all 33 rows, untouched by the rotation (SPEC §13.3 step 4).
    const earlier = await gw.call('GET', `/v1/conversations/${conv}/sessions/${old.sessionId}/messages`, key);
    expect(earlier.status).toBe(200);
    expect(earlier.json).toMatchObject({ sessionId: old.sessionId, nextCursor: null });
    expect(earlier.json.messages).toHaveLength(33);
    expect(earlier.json.messages[1].message.content).toMatch(/^history 0: please inspect/);

    // The current session: the unpaged answer is what it always was; pages of 4 add up to it, in the same order.
    const whole = await gw.call('GET', `/v1/conversations/${conv}/messages`, key);
    expect(whole.json.nextCursor).toBeNull();
    const sameAsSession = await gw.call('GET', `/v1/conversations/${conv}/sessions/${current.sessionId}/messages`, key);
    expect(sameAsSession.json).toEqual(whole.json);
    const paged = await allPages(key, `/v1/conversations/${conv}/messages`, 4);
    expect(paged.rows).toEqual(whole.json.messages);
    expect(paged.pages).toBe(Math.ceil(whole.json.messages.length / 4));
    const oldPaged = await allPages(
      key,
      `/v1/conversations/${conv}/sessions/${old.sessionId}/messages?archived=true`,
      10,
    );
    expect(oldPaged.rows.map((r) => r.id)).toEqual(earlier.json.messages.map((r: Row) => r.id));

    // A cursor belongs to its session and ordering.
    const first = await gw.call('GET', `/v1/conversations/${conv}/messages?limit=2`, key);
    const cursor = first.json.nextCursor as string;
    for (const path of [
      `/v1/conversations/${conv}/messages?archived=true&cursor=${cursor}`,
      `/v1/conversations/${conv}/sessions/${old.sessionId}/messages?cursor=${cursor}`,
      `/v1/conversations/${conv}/messages?cursor=bm90LWpzb24`,
    ]) {
      const refused = await gw.call('GET', path, key);
      expect(refused.status).toBe(400);
      expect(refused.json.message).toMatch(/cursor/);
    }
    expect((await gw.call('GET', `/v1/conversations/${conv}/messages?limit=0`, key)).json.message).toMatch(/limit/);

    // Unknown sessions, another conversation's session, another tenant.
    expect((await gw.call('GET', `/v1/conversations/${conv}/sessions/nope/messages`, key)).status).toBe(404);
    const other = await gw.tenant();
    expect((await gw.call('GET', `/v1/conversations/${conv}/sessions`, other.key)).status).toBe(404);
    const path = `/v1/conversations/${conv}/sessions/${old.sessionId}/messages`;
    expect((await gw.call('GET', path, other.key)).status).toBe(404);
  });
});

describe('export', () => {
  it('streams every message of every session, the compactions and the sessions as JSONL', async () => {
    const { key, id: tenantId } = await gw.tenant({ in_place: false, protect_first_n: 1, protect_last_n: 4 });
    const { conv, compactionId } = await compactedConversation(key, 'Exported');
    const res = await gw.call('GET', `/v1/conversations/${conv}/export`, key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(res.text.endsWith('\n')).toBe(true);
    const lines = res.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: 'conversation', conversationId: conv, title: 'Exported' });
    const byType = (type: string) => lines.filter((l) => l.type === type);
    const sessions = (await gw.call('GET', `/v1/conversations/${conv}/sessions`, key)).json.sessions;
    expect(byType('session')).toEqual(sessions.map((s: object) => ({ type: 'session', ...s })));

    // Every row of both sessions, once, in id order: the old session's 33 (archived by the rotation's compaction only
    // in the sense that a new session holds the summary: they stay as they were) and the new session's rows.
    const messages = byType('message');
    const expected: Row[] = [];
    for (const s of sessions) {
      const rows = await gw.call(
        'GET',
        `/v1/conversations/${conv}/sessions/${s.sessionId}/messages?archived=true`,
        key,
      );
      expected.push(...rows.json.messages);
    }
    expect(messages.map((m) => m.id)).toEqual(expected.map((r) => r.id).sort((a, b) => a - b));
    expect(new Set(messages.map((m) => m.sessionId))).toEqual(new Set(sessions.map((s: any) => s.sessionId)));
    const summary = messages.find((m) => m.summaryBody !== null);
    expect(summary).toMatchObject({ active: true, compacted: false, compactionId });

    const [compaction] = byType('compaction');
    expect(byType('compaction')).toHaveLength(1);
    expect(compaction).toMatchObject({ id: compactionId, status: 'committed', inPlace: false, trigger: 'manual' });
    expect(compaction.summary).toEqual(expect.stringContaining('CONTEXT COMPACTION'));
    for (const blob of ['plan', 'pruneResult', 'previousSummary', 'compactedRowIds', 'prune_result'])
      expect(compaction).not.toHaveProperty(blob);
    expect(lines.at(-1)).toEqual({ type: 'end', messages: messages.length, compactions: 1, sessions: 2 });

    // Streamed (no length known up front), and the same lines whatever the page size of the reads.
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const row = await getConversation(gw.testDb.db, tenantId, conv);
    let paged = '';
    for await (const text of exportConversation(gw.testDb.db, tenantId, row!, 4)) paged += text;
    const withoutExportTime = (jsonl: string) => jsonl.replace(/"exportedAt":"[^"]+"/, '');
    expect(withoutExportTime(paged)).toEqual(withoutExportTime(res.text));
  });

  it('marks archived rows of an in-place compaction with the compaction that archived them', async () => {
    const { key } = await gw.tenant({ protect_first_n: 1, protect_last_n: 4 });
    const { conv, compactionId } = await compactedConversation(key, 'In place');
    const lines = (await gw.call('GET', `/v1/conversations/${conv}/export`, key)).text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    const messages = lines.filter((l) => l.type === 'message');
    const archived = messages.filter((m) => m.compacted);
    expect(archived.length).toBeGreaterThan(0);
    for (const m of archived) expect(m).toMatchObject({ active: false, compactionId });
    const live = await gw.call('GET', `/v1/conversations/${conv}/messages`, key);
    expect(
      messages
        .filter((m) => m.active)
        .map((m) => m.id)
        .sort(),
    ).toEqual(live.json.messages.map((r: Row) => r.id).sort());
    expect(lines.at(-1)).toMatchObject({ type: 'end', messages: messages.length, sessions: 1 });
    expect((await gw.call('GET', '/v1/conversations/nope/export', key)).status).toBe(404);
  });
});

describe('conversation list', () => {
  it('pages newest updated first and filters by title, model and update time, within the tenant', async () => {
    const { key } = await gw.tenant();
    const made: string[] = [];
    for (const [title, model] of [
      ['Alpha 100% plan', 'model-a'],
      ['beta notes', 'model-b'],
      ['ALPHA follow-up', 'model-b'],
      [null, 'model-a'],
    ] as const) {
      const created = await gw.call('POST', '/v1/conversations', key, { model, ...(title ? { title } : {}) });
      expect(created.status).toBe(201);
      made.push(created.json.conversationId);
    }
    // A message makes the first conversation the most recently updated, after `cut` (the database's clock is this
    // host's: a few milliseconds either side of `cut` keep both sides of it apart).
    await pause(5);
    const cut = new Date().toISOString();
    await pause(5);
    const posted = await gw.call('POST', `/v1/conversations/${made[0]}/messages`, key, {
      messages: keyed([{ role: 'user', content: 'hello again' }]),
    });
    expect(posted.status).toBe(202);

    const whole = await gw.call('GET', '/v1/conversations', key);
    expect(whole.status).toBe(200);
    const ids = whole.json.conversations.map((c: { conversationId: string }) => c.conversationId);
    expect(ids).toEqual([made[0], made[3], made[2], made[1]]);
    expect(whole.json.nextCursor).toBeNull();
    expect(whole.json.conversations[0]).toMatchObject({
      title: 'Alpha 100% plan',
      model: 'model-a',
      activeMessages: 1,
    });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await gw.call('GET', `/v1/conversations?limit=1${cursor ? `&cursor=${cursor}` : ''}`, key);
      expect(page.json.conversations).toHaveLength(1);
      seen.push(page.json.conversations[0].conversationId);
      cursor = page.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);

    const list = async (query: string) =>
      (await gw.call('GET', `/v1/conversations?${query}`, key)).json.conversations.map(
        (c: { conversationId: string }) => c.conversationId,
      );
    expect(await list('title=alpha')).toEqual([made[0], made[2]]);
    expect(await list(`title=${encodeURIComponent('100%')}`)).toEqual([made[0]]);
    expect(await list('title=_')).toEqual([]);
    expect(await list('model=model-b')).toEqual([made[2], made[1]]);
    expect(await list(`updatedAfter=${encodeURIComponent(cut)}`)).toEqual([made[0]]);
    expect(await list(`updatedBefore=${encodeURIComponent(cut)}&model=model-a`)).toEqual([made[3]]);

    const other = await gw.tenant();
    expect((await gw.call('GET', '/v1/conversations', other.key)).json.conversations).toEqual([]);
    for (const [query, field] of [
      ['cursor=abc', 'cursor'],
      ['updatedAfter=yesterday', 'updatedAfter'],
      ['limit=501', 'limit'],
      ['title=', 'title'],
    ]) {
      const refused = await gw.call('GET', `/v1/conversations?${query}`, key);
      expect(refused.status).toBe(400);
      expect(refused.json.message).toContain(field);
    }
  });
});
