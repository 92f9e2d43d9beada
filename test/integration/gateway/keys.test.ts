// Tenant keys and the admin key (issue #14 §4), on the real gateway: listing never shows a key; a read key uses the
// routes that store nothing and gets 403 naming its scope elsewhere; a revoked key is refused at once on every route
// (the gateway keeps a key only while PostgreSQL notifies it of changes, infra/db/keyCache.ts: a change made
// elsewhere reaches it, and without its listening connection it keeps nothing); a rotation keeps the old key for the overlap asked for; the
// previous admin key works beside the new one while the admin key is rotated.
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../../infra/db/apiKeys.js';
import { KEY_LISTENER_NAME, KeyCache } from '../../../infra/db/keyCache.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { keyed } from '../workflows/transcript.js';

const PREVIOUS_ADMIN_KEY = `admin-previous-${randomUUID()}`;
let gw: GatewayHarness;

beforeAll(async () => {
  gw = await startGatewayHarness({ gateway: { previousAdminKey: PREVIOUS_ADMIN_KEY } });
});
afterAll(async () => {
  await gw?.close();
});

const admin = (method: string, path: string, body?: unknown) => gw.call(method, path, gw.adminKey, body);

/** A tenant with a conversation holding one (quiet) user message, written with a full key. */
async function seeded(): Promise<{ id: string; key: string; conversationId: string }> {
  const tenant = await gw.tenant();
  const conversationId = `c-${randomUUID().slice(0, 8)}`;
  expect((await gw.call('POST', '/v1/conversations', tenant.key, { conversationId })).status).toBe(201);
  const messages = keyed([{ role: 'user', content: 'the rollout of kubectl' }], 'seed');
  expect((await gw.call('POST', `/v1/conversations/${conversationId}/messages`, tenant.key, { messages })).status).toBe(
    202,
  );
  return { ...tenant, conversationId };
}

/** Every tenant route with a body it accepts: the answer to a key that may not use it comes before the handler. */
function everyRoute(conversationId: string): Array<[string, string, unknown?]> {
  const conv = `/v1/conversations/${conversationId}`;
  return [
    ['GET', `${conv}/status`],
    ['GET', `${conv}/messages?archived=true`],
    ['GET', `${conv}/context`],
    ['GET', '/v1/search?q=rollout'],
    ['POST', '/v1/search', { q: 'rollout' }],
    ['GET', '/v1/compactions'],
    ['POST', '/v1/conversations', {}],
    ['POST', `${conv}/messages`, { messages: keyed([{ role: 'user', content: 'more' }], 'more') }],
    ['POST', `${conv}/compact`, {}],
    ['PUT', `${conv}/messages/1/pin`],
    ['DELETE', `${conv}/messages/1/pin`],
    ['POST', `/v1/compactions/${randomUUID()}/replay`],
    ['POST', '/v1/chat/completions', { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }],
    ['POST', '/v1/responses', { model: 'gpt-test', input: 'hi' }],
    ['POST', '/v1/messages', { model: 'claude-x', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }],
    ['POST', '/v1/messages/count_tokens', { model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] }],
  ];
}
const READ_ROUTES = 6;

describe('admin: keys of a tenant', () => {
  it('issues a key with a label and scope, and lists keys without the key or its hash', async () => {
    const tenant = await gw.tenant();
    const issued = await admin('POST', `/v1/tenants/${tenant.id}/keys`, { label: 'dashboards', scope: 'read' });
    expect(issued.status).toBe(201);
    expect(issued.json).toMatchObject({ tenantId: tenant.id, label: 'dashboards', scope: 'read' });
    const listed = await admin('GET', `/v1/tenants/${tenant.id}/keys`);
    expect(listed.status).toBe(200);
    expect(listed.json.keys).toEqual([
      {
        id: expect.any(String),
        label: null,
        scope: 'full',
        createdAt: expect.any(String),
        revokedAt: null,
        replaces: null,
      },
      {
        id: issued.json.id,
        label: 'dashboards',
        scope: 'read',
        createdAt: expect.any(String),
        revokedAt: null,
        replaces: null,
      },
    ]);
    for (const secret of [tenant.key, issued.json.key, hashApiKey(tenant.key), hashApiKey(issued.json.key)]) {
      expect(listed.text).not.toContain(secret);
    }
  });

  it('refuses a bad scope, an unknown tenant, a tenant key and no key', async () => {
    const tenant = await gw.tenant();
    const bad = await admin('POST', `/v1/tenants/${tenant.id}/keys`, { scope: 'write' });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('body.scope');
    expect((await admin('GET', '/v1/tenants/nobody-here/keys')).status).toBe(404);
    expect((await gw.call('GET', `/v1/tenants/${tenant.id}/keys`, tenant.key)).status).toBe(403);
    expect((await gw.call('GET', `/v1/tenants/${tenant.id}/keys`, null)).status).toBe(401);
  });

  it('a tenant’s key cannot be revoked or rotated under another tenant', async () => {
    const a = await gw.tenant();
    const b = await gw.tenant();
    const [aKey] = (await admin('GET', `/v1/tenants/${a.id}/keys`)).json.keys;
    expect((await admin('POST', `/v1/tenants/${b.id}/keys/${aKey.id}/revoke`, {})).status).toBe(404);
    expect((await admin('POST', `/v1/tenants/${b.id}/keys/${aKey.id}/rotate`, {})).status).toBe(404);
    expect((await gw.call('GET', '/v1/compactions', a.key)).status).toBe(200);
  });
});

describe('read-only keys', () => {
  it('use the routes that store nothing; every other route answers 403 naming the scope', async () => {
    const { id, conversationId } = await seeded();
    const read = (await admin('POST', `/v1/tenants/${id}/keys`, { scope: 'read' })).json.key as string;
    const routes = everyRoute(conversationId);
    for (const [method, path, body] of routes.slice(0, READ_ROUTES)) {
      const answer = await gw.call(method, path, read, body);
      expect(answer.status, `${method} ${path}`).toBe(200);
    }
    const transcript = await gw.call('GET', `/v1/conversations/${conversationId}/messages`, read);
    expect(transcript.json.messages.map((m: { message: { content: string } }) => m.message.content)).toEqual([
      'the rollout of kubectl',
    ]);
    expect((await gw.call('GET', '/v1/search?q=rollout', read)).json.results).toHaveLength(1);
    for (const [method, path, body] of routes.slice(READ_ROUTES)) {
      const answer = await gw.call(method, path, read, body);
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(answer.text, `${method} ${path}`).toContain("scope 'read'");
    }
    // Nothing was stored by the refused writes.
    expect((await gw.call('GET', `/v1/conversations/${conversationId}/messages`, read)).json.messages).toHaveLength(1);
    // The drop-in routes refuse in their dialects.
    const chat = await gw.call('POST', '/v1/chat/completions', read, routes[12]![2]);
    expect(chat.json.error).toMatchObject({ type: 'permission_error' });
    const claude = await gw.call('POST', '/v1/messages', read, routes[14]![2]);
    expect(claude.json).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
  });
});

describe('revocation', () => {
  it('a revoked key gets 401 at once on every route, the tenant’s other keys keep working', async () => {
    const { id, key, conversationId } = await seeded();
    const other = (await admin('POST', `/v1/tenants/${id}/keys`, { label: 'other' })).json.key as string;
    const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    expect((await gw.call('GET', `/v1/conversations/${conversationId}/status`, key)).status).toBe(200);
    const revoked = await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`, {});
    expect(revoked.status).toBe(200);
    expect(Date.parse(revoked.json.revokedAt)).toBeLessThanOrEqual(Date.now() + 1_000);
    for (const [method, path, body] of everyRoute(conversationId)) {
      const answer = await gw.call(method, path, key, body);
      expect(answer.status, `${method} ${path}`).toBe(401);
      const asApiKey = await gw.call(method, path, null, body, { headers: { 'x-api-key': key } });
      expect(asApiKey.status, `${method} ${path} (x-api-key)`).toBe(401);
    }
    expect((await gw.call('GET', `/v1/conversations/${conversationId}/status`, other)).status).toBe(200);
    // Revoking again keeps the first time; an unknown key is 404.
    const again = await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`, { afterSeconds: 600 });
    expect(again.json.revokedAt).toBe(revoked.json.revokedAt);
    expect((await admin('POST', `/v1/tenants/${id}/keys/0123456789abcdef/revoke`, {})).status).toBe(404);
  });

  it('a revocation afterSeconds from now leaves the key working until then', async () => {
    const { id, key } = await seeded();
    const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    const later = await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`, { afterSeconds: 3600 });
    expect(Date.parse(later.json.revokedAt)).toBeGreaterThan(Date.now() + 3_000_000);
    expect((await gw.call('GET', '/v1/compactions', key)).status).toBe(200);
    // Brought forward to now (no body: at once).
    expect((await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`)).status).toBe(200);
    expect((await gw.call('GET', '/v1/compactions', key)).status).toBe(401);
  });
});

describe('the keys a gateway keeps (infra/db/keyCache.ts)', () => {
  const status = (key: string, conversationId: string) =>
    gw.call('GET', `/v1/conversations/${conversationId}/status`, key).then((answer) => answer.status);
  /** Revokes every key of the tenant as another gateway (or an operator in psql) would: straight in PostgreSQL. */
  const revokeElsewhere = (tenantId: string) =>
    gw.testDb.db.updateTable('api_keys').set({ revoked_at: new Date() }).where('tenant_id', '=', tenantId).execute();
  const until = async (done: () => Promise<boolean> | boolean, what: string) => {
    for (let i = 0; i < 100; i++) {
      if (await done()) return;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    throw new Error(`not within 3 s: ${what}`);
  };

  it('keeps a resolved key; a revocation made elsewhere reaches it through PostgreSQL’s notification', async () => {
    const { id, key, conversationId } = await seeded();
    expect(gw.keys.live).toBe(true);
    expect(await status(key, conversationId)).toBe(200);
    const { hits, lookups } = gw.keys;
    expect(await status(key, conversationId)).toBe(200);
    expect(gw.keys.hits).toBe(hits + 1);
    expect(gw.keys.lookups).toBe(lookups);
    // A change of the tenant (its policy's limits travel with the key) made elsewhere is heard too.
    await gw.testDb.db.updateTable('tenants').set({ name: 'renamed elsewhere' }).where('id', '=', id).execute();
    await until(async () => {
      const before = gw.keys.lookups;
      return (await status(key, conversationId)) === 200 && gw.keys.lookups > before;
    }, 'the tenant’s change heard');
    await revokeElsewhere(id);
    // The key is kept for 10 s: only the notification makes it fail sooner.
    await until(async () => (await status(key, conversationId)) === 401, 'the revoked key refused');
  });

  it('the gateway that revokes forgets the key before it answers, not when the notice comes', async () => {
    const { id, key, conversationId } = await seeded();
    // A gateway whose cache hears no notices (it listens elsewhere): only its own forgetting can refuse the key.
    const deaf = new KeyCache(gw.testDb.url, { channel: 'dc_keys_never_notified' });
    await deaf.start();
    const adminKey = `admin-${randomUUID()}`;
    const app = await gw.another({ keys: deaf, adminKey });
    try {
      const read = () =>
        app.inject({ url: `/v1/conversations/${conversationId}/status`, headers: { authorization: `Bearer ${key}` } });
      expect((await read()).statusCode).toBe(200);
      expect((await read()).statusCode).toBe(200);
      expect(deaf.hits).toBe(1);
      const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
      const revoked = await app.inject({
        method: 'POST',
        url: `/v1/tenants/${id}/keys/${first.id}/revoke`,
        headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(revoked.statusCode).toBe(200);
      expect((await read()).statusCode).toBe(401);
    } finally {
      await app.close();
      await deaf.close();
    }
  });

  it('a lookup in flight when a change arrives is not kept; a key that expires later is never kept', async () => {
    const { id, key } = await seeded();
    gw.keys.forgetTenant(id); // kept since seeded()'s requests
    const resolving = gw.keys.resolve(gw.testDb.db, key);
    gw.keys.forgetTenant(id);
    expect(await resolving).toMatchObject({ tenantId: id, expires: false });
    const { lookups } = gw.keys;
    await gw.keys.resolve(gw.testDb.db, key);
    expect(gw.keys.lookups).toBe(lookups + 1);
    // Revoked an hour from now (a rotation's overlap): looked up on every request, so it stops working on time.
    const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`, { afterSeconds: 3600 });
    for (let i = 0; i < 2; i++) expect(await gw.keys.resolve(gw.testDb.db, key)).toMatchObject({ expires: true });
    expect(gw.keys.lookups).toBe(lookups + 3);
  });

  it('without its listening connection it keeps nothing, and listens again', async () => {
    const { id, key, conversationId } = await seeded();
    expect(await status(key, conversationId)).toBe(200);
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE application_name = ${KEY_LISTENER_NAME} AND datname = current_database()`.execute(gw.testDb.db);
    await until(() => !gw.keys.live, 'the listener lost');
    // No notification can reach it now: the revocation holds at the very next request.
    await revokeElsewhere(id);
    expect(await status(key, conversationId)).toBe(401);
    await until(() => gw.keys.live, 'listening again');
    const other = await gw.tenant();
    const created = await gw.call('POST', '/v1/conversations', other.key, { conversationId: `c-${randomUUID()}` });
    expect(created.status).toBe(201);
    const { hits } = gw.keys;
    expect((await gw.call('GET', '/v1/compactions', other.key)).status).toBe(200);
    expect(gw.keys.hits).toBe(hits + 1);
  });
});

describe('rotation', () => {
  it('without overlap: a new key with the same label and scope, the old one refused at once', async () => {
    const { id } = await seeded();
    const old = (await admin('POST', `/v1/tenants/${id}/keys`, { label: 'ci', scope: 'read' })).json;
    const rotated = await admin('POST', `/v1/tenants/${id}/keys/${old.id}/rotate`, {});
    expect(rotated.status).toBe(201);
    expect(rotated.json).toMatchObject({ tenantId: id, label: 'ci', scope: 'read', replaces: old.id });
    expect(rotated.json.key).not.toBe(old.key);
    expect((await gw.call('GET', '/v1/compactions', old.key)).status).toBe(401);
    expect((await gw.call('GET', '/v1/compactions', rotated.json.key)).status).toBe(200);
    expect((await gw.call('POST', '/v1/conversations', rotated.json.key, {})).status).toBe(403);
    const again = await admin('POST', `/v1/tenants/${id}/keys/${old.id}/rotate`, {});
    expect(again.status).toBe(409);
    expect(again.json.message).toContain('is revoked');
  });

  it('with overlapSeconds: both keys work until the old one is revoked', async () => {
    const { id, key, conversationId } = await seeded();
    const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    const rotated = await admin('POST', `/v1/tenants/${id}/keys/${first.id}/rotate`, { overlapSeconds: 3600 });
    expect(Date.parse(rotated.json.replacedKeyRevokedAt)).toBeGreaterThan(Date.now() + 3_000_000);
    const status = `/v1/conversations/${conversationId}/status`;
    expect((await gw.call('GET', status, key)).status).toBe(200);
    expect((await gw.call('GET', status, rotated.json.key)).status).toBe(200);
    const listed = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    expect(listed).toEqual([
      expect.objectContaining({ id: first.id, revokedAt: rotated.json.replacedKeyRevokedAt, replaces: null }),
      expect.objectContaining({ id: rotated.json.id, revokedAt: null, replaces: first.id }),
    ]);
    await admin('POST', `/v1/tenants/${id}/keys/${first.id}/revoke`, {});
    expect((await gw.call('GET', status, key)).status).toBe(401);
    expect((await gw.call('GET', status, rotated.json.key)).status).toBe(200);
  });

  it('refuses an overlap out of range, naming the field', async () => {
    const { id } = await seeded();
    const [first] = (await admin('GET', `/v1/tenants/${id}/keys`)).json.keys;
    const bad = await admin('POST', `/v1/tenants/${id}/keys/${first.id}/rotate`, { overlapSeconds: -1 });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toContain('body.overlapSeconds');
  });
});

describe('admin key rotation', () => {
  it('the previous admin key works beside the new one; any other key is refused', async () => {
    const id = `t-${randomUUID().slice(0, 8)}`;
    expect((await gw.call('POST', '/v1/tenants', PREVIOUS_ADMIN_KEY, { id })).status).toBe(201);
    expect((await gw.call('GET', `/v1/tenants/${id}/keys`, gw.adminKey)).status).toBe(200);
    expect((await gw.call('GET', `/v1/tenants/${id}/keys`, PREVIOUS_ADMIN_KEY)).status).toBe(200);
    expect((await gw.call('GET', `/v1/tenants/${id}/keys`, `${PREVIOUS_ADMIN_KEY}x`)).status).toBe(403);
  });
});
