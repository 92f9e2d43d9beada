// Message rows on the real PostgreSQL: lossless ChatMessage ⇄ row mapping, idempotent appends, reads.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { wireKey } from '../../../engine/commit/messageKeys.js';
import type { ChatMessage } from '../../../engine/types.js';
import { appendMessages } from '../../../infra/db/conversationAppend.js';
import { fieldsToMessage, messageToFields, toStoredMessage } from '../../../infra/db/messageRows.js';
import { listMessages, loadRowsByIds, loadTranscript } from '../../../infra/db/messages.js';
import { SessionNotFoundError } from '../../../infra/db/storeErrors.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { createTestDatabase, type TestDatabase } from '../../support/harness/db.js';
import { assistant, seedSession, toolCall, toolResult, user } from './storeFixtures.js';

let testDb: TestDatabase;

beforeAll(async () => {
  testDb = await createTestDatabase(inject('databaseUrl'));
});
afterAll(async () => {
  await testDb?.drop();
});

const roundTripCases: Array<[string, ChatMessage]> = [
  ['string content', { role: 'user', content: 'hello, world — ünïcödé 日本語 🎉' }],
  ['empty string content', { role: 'assistant', content: '' }],
  ['null content', { role: 'assistant', content: null }],
  [
    'parts with an image',
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look at this' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'text', text: 'and this' },
      ],
    },
  ],
  ['tool calls with null content', toolCall('call_1', 'shell', '{"cmd":"kubectl get pods","n":1}')],
  [
    'tool calls with text content and two calls',
    {
      role: 'assistant',
      content: 'running two things',
      tool_calls: [
        { id: 'a', type: 'function', function: { name: 'read_file', arguments: '{"path":"/etc/hosts"}' } },
        { id: 'b', type: 'function', function: { name: 'grep', arguments: '{}' } },
      ],
    },
  ],
  ['tool row with name', toolResult('call_1', 'pod-a Running', 'shell')],
  ['tool row without name', toolResult('call_2', 'ok')],
  ['user with name (kept in extra)', { role: 'user', content: 'hi', name: 'alice' }],
  [
    'extra runtime properties',
    {
      role: 'assistant',
      content: 'with extras',
      reasoning: 'thought about it',
      codex_reasoning_items: [{ id: 'r1', encrypted: 'xyz', nested: { a: [1, 2, { b: null }] } }],
      finish_reason: 'stop',
    } as ChatMessage,
  ],
  ['system', { role: 'system', content: 'You are a helpful agent.' }],
];

describe('ChatMessage ⇄ row mapping', () => {
  it.each(roundTripCases)('%s round-trips through a stored row', async (_name, message) => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-map', []);
    const { appended } = await appendMessages(testDb.db, tenantId, sessionId, [{ message, idempotencyKey: 'k' }]);
    const [row] = await loadRowsByIds(
      testDb.db,
      tenantId,
      appended.map((a) => a.id),
    );
    expect(row?.message).toEqual(message);
    expect(wireKey(row!.message)).toBe(wireKey(message));
    expect(toStoredMessage(message)).toEqual(message);
  });

  it('stores string content in content, parts in content_parts, name of tool rows in tool_name', () => {
    expect(messageToFields(user('x'))).toMatchObject({ content: 'x', content_parts: null, extra: null });
    expect(messageToFields(user([{ type: 'text', text: 'x' }]))).toMatchObject({
      content: null,
      content_parts: [{ type: 'text', text: 'x' }],
    });
    expect(messageToFields(toolResult('c', 'out', 'shell'))).toMatchObject({ tool_name: 'shell', extra: null });
    expect(messageToFields({ role: 'assistant', content: 'x', name: 'bot' })).toMatchObject({
      tool_name: null,
      extra: { name: 'bot' },
    });
  });

  it('never stores cache_control (message or part level); missing content reads back as null', () => {
    const marked = {
      role: 'user',
      content: [{ type: 'text', text: 'cached', cache_control: { type: 'ephemeral' } }],
      cache_control: { type: 'ephemeral', ttl: '1h' },
    } as ChatMessage;
    const fields = messageToFields(marked);
    expect(fields.extra).toBeNull();
    expect(fields.content_parts).toEqual([{ type: 'text', text: 'cached' }]);
    expect(fieldsToMessage({ ...fields })).toEqual({ role: 'user', content: [{ type: 'text', text: 'cached' }] });
    expect(wireKey(marked)).toBe(wireKey(toStoredMessage(marked)));
    expect(toStoredMessage({ role: 'assistant' } as unknown as ChatMessage)).toEqual({
      role: 'assistant',
      content: null,
    });
  });

  it('wireKey: independent of key order and of non-wire properties, sensitive to every wire field', () => {
    const a = {
      role: 'assistant',
      content: 'x',
      tool_calls: [{ id: '1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    } as ChatMessage;
    const reordered = JSON.parse(
      '{"tool_calls":[{"function":{"arguments":"{}","name":"f"},"type":"function","id":"1"}],"content":"x","role":"assistant"}',
    );
    expect(wireKey(reordered)).toBe(wireKey(a));
    expect(wireKey({ ...a, reasoning: 'other' } as ChatMessage)).toBe(wireKey(a));
    expect(wireKey({ ...a, role: 'user' })).not.toBe(wireKey(a));
    expect(wireKey({ ...a, content: 'y' })).not.toBe(wireKey(a));
    expect(wireKey({ ...a, name: 'n' })).not.toBe(wireKey(a));
    expect(wireKey({ ...a, tool_calls: [] })).not.toBe(wireKey(a));
    expect(wireKey(toolResult('1', 'x'))).not.toBe(wireKey(toolResult('2', 'x')));
    expect(wireKey(user('x'))).not.toBe(wireKey(user([{ type: 'text', text: 'x' }])));
    expect(wireKey(user(null))).not.toBe(wireKey(user('')));
  });

  it('indexed text covers content parts, tool name and call arguments (SPEC §14.2)', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-map', [
      user([
        { type: 'text', text: 'alpha' },
        { type: 'image_url', image_url: { url: 'http://x/y.png' } },
        { type: 'text', text: 'beta' },
      ]),
      toolCall('c1', 'shell', '{"cmd":"kubectl rollout"}'),
      toolResult('c1', 'done', 'shell'),
    ]);
    const texts = await withTenant(testDb.db, tenantId, (tx) =>
      tx.selectFrom('messages').select('indexed_text').where('session_id', '=', sessionId).orderBy('id').execute(),
    );
    expect(texts.map((t) => t.indexed_text)).toEqual([
      'alpha beta  ',
      '  shell {"cmd":"kubectl rollout"}',
      'done shell ',
    ]);
  });
});

describe('appendMessages', () => {
  it('appends in batch order with consecutive positions and a token estimate', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-append', [user('first')]);
    const result = await appendMessages(testDb.db, tenantId, sessionId, [
      { message: assistant('second'), idempotencyKey: 'a' },
      { message: user('third'), idempotencyKey: 'b' },
      { message: assistant('fourth'), idempotencyKey: 'c' },
    ]);
    expect(result.duplicates).toEqual([]);
    expect(result.appended.map((a) => [a.position, a.idempotencyKey])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
    expect(result.appended.every((a) => a.tokenEstimate > 0)).toBe(true);
    const ids = result.appended.map((a) => a.id);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    const transcript = await loadTranscript(testDb.db, tenantId, sessionId);
    expect(transcript.map((r) => r.message)).toEqual([
      user('first'),
      assistant('second'),
      user('third'),
      assistant('fourth'),
    ]);
  });

  it('the same batch twice is a no-op that reports every key as duplicate', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-append', []);
    const batch = [
      { message: user('one'), idempotencyKey: 'k1' },
      { message: assistant('two'), idempotencyKey: 'k2' },
    ];
    const first = await appendMessages(testDb.db, tenantId, sessionId, batch);
    const second = await appendMessages(testDb.db, tenantId, sessionId, batch);
    expect(first.appended).toHaveLength(2);
    expect(second).toMatchObject({ appended: [], duplicates: ['k1', 'k2'] });
    const rows = await listMessages(testDb.db, tenantId, sessionId, { includeInactive: true });
    expect(rows.map((r) => r.message)).toEqual([user('one'), assistant('two')]);
  });

  it('a partly stored batch appends only the new items, in order, after the last position', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-append', []);
    await appendMessages(testDb.db, tenantId, sessionId, [{ message: user('one'), idempotencyKey: 'k1' }]);
    const result = await appendMessages(testDb.db, tenantId, sessionId, [
      { message: user('one'), idempotencyKey: 'k1' },
      { message: assistant('two'), idempotencyKey: 'k2' },
      { message: assistant('two again'), idempotencyKey: 'k2' },
      { message: user('three'), idempotencyKey: 'k3' },
    ]);
    expect(result.duplicates).toEqual(['k1', 'k2']);
    expect(result.appended.map((a) => [a.idempotencyKey, a.position])).toEqual([
      ['k2', 1],
      ['k3', 2],
    ]);
    const transcript = await loadTranscript(testDb.db, tenantId, sessionId);
    expect(transcript.map((r) => r.message)).toEqual([user('one'), assistant('two'), user('three')]);
  });

  it('concurrent appends to one session get distinct, consecutive positions', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-append', []);
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        appendMessages(testDb.db, tenantId, sessionId, [
          { message: user(`u${i}`), idempotencyKey: `u${i}` },
          { message: assistant(`a${i}`), idempotencyKey: `a${i}` },
        ]),
      ),
    );
    const transcript = await loadTranscript(testDb.db, tenantId, sessionId);
    expect(transcript.map((r) => r.position)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    // Each batch stays contiguous.
    for (let i = 0; i < 12; i += 2) {
      const u = transcript[i]!.message.content as string;
      expect(transcript[i + 1]!.message.content).toBe(`a${u.slice(1)}`);
    }
  });

  it('rejects an unknown session and an empty idempotency key', async () => {
    await seedSession(testDb.db, 'tenant-append', []);
    await expect(
      appendMessages(testDb.db, 'tenant-append', 'no-such-session', [{ message: user('x'), idempotencyKey: 'k' }]),
    ).rejects.toBeInstanceOf(SessionNotFoundError);
    await expect(
      appendMessages(testDb.db, 'tenant-append', 'whatever', [{ message: user('x'), idempotencyKey: '' }]),
    ).rejects.toThrow(/idempotencyKey/);
  });
});

describe('reads', () => {
  it('loadRowsByIds returns rows of any flag in the order asked, skipping unknown ids', async () => {
    const { tenantId, sessionId, rows } = await seedSession(testDb.db, 'tenant-read', [
      user('a'),
      assistant('b'),
      user('c'),
    ]);
    await withTenant(testDb.db, tenantId, (tx) =>
      tx.updateTable('message_state').set({ active: false }).where('message_id', '=', rows[1]!.id).execute(),
    );
    const loaded = await loadRowsByIds(testDb.db, tenantId, [rows[2]!.id, 999_999_999, rows[1]!.id, rows[0]!.id]);
    expect(loaded.map((r) => [r.message.content, r.active])).toEqual([
      ['c', true],
      ['b', false],
      ['a', true],
    ]);
    expect((await loadTranscript(testDb.db, tenantId, sessionId)).map((r) => r.message.content)).toEqual(['a', 'c']);
  });

  it('listMessages: transcript by default, archived rows on request, superseded rows only with includeInactive', async () => {
    const { tenantId, sessionId, rows } = await seedSession(testDb.db, 'tenant-read', [
      user('a'),
      assistant('b'),
      user('c'),
    ]);
    await withTenant(testDb.db, tenantId, async (tx) => {
      await tx
        .updateTable('message_state')
        .set({ active: false, compacted: true })
        .where('message_id', '=', rows[0]!.id)
        .execute();
      await tx.updateTable('message_state').set({ active: false }).where('message_id', '=', rows[1]!.id).execute();
    });
    const content = async (opts: Parameters<typeof listMessages>[3]) =>
      (await listMessages(testDb.db, tenantId, sessionId, opts)).map((r) => r.message.content);
    expect(await content({})).toEqual(['c']);
    expect(await content({ includeArchived: true })).toEqual(['a', 'c']);
    expect(await content({ includeInactive: true })).toEqual(['a', 'b', 'c']);
  });

  it('token estimates are stored per row', async () => {
    const { tenantId, sessionId } = await seedSession(testDb.db, 'tenant-read', [user('x'.repeat(400))]);
    const total = await withTenant(testDb.db, tenantId, (tx) =>
      sql<{
        total: number;
      }>`SELECT sum(token_estimate)::int AS total FROM messages WHERE session_id = ${sessionId}`.execute(tx),
    );
    expect(total.rows[0]?.total).toBeGreaterThanOrEqual(100);
  });
});
