// Erasure over HTTP (issue #14 §6 data lifecycle) on a real gateway, worker, PostgreSQL and Temporal: a compacted,
// rotated conversation and then its whole tenant are erased — search, export, the message routes and Temporal's
// visibility list (what the Temporal UI shows; polled, it is eventually consistent) show nothing of them, while another
// conversation and another tenant are untouched; the audit rows say who erased what and how many rows, never content;
// the confirmation must repeat the id; the tenant role still cannot delete anything. A tenant's workflows are found
// by the ids PostgreSQL names too, so one started a moment ago (a webhook created just before) is not left behind.
import type { Client } from '@temporalio/client';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findWorkflows } from '../../../clients/workflowErasure.js';
import { erasureScope } from '../../../infra/db/erasure.js';
import { withTenant } from '../../../infra/db/tenant.js';
import { conversationWorkflowId, webhookWorkflowId } from '../../../workflows/ids.js';
import { type GatewayHarness, startGatewayHarness } from '../../support/harness/gateway.js';
import { agentTranscript, keyed } from '../workflows/transcript.js';

let gw: GatewayHarness;
let temporal: Client;
beforeAll(async () => {
  gw = await startGatewayHarness();
  temporal = gw.stack.client.temporal.client;
});
afterAll(async () => {
  await gw?.close();
});

const TABLES = ['message_state', 'turns', 'events', 'compactions', 'messages', 'conversations', 'sessions'] as const;

/** A conversation whose every user message carries `word`, compacted once (rotated under in_place: false). */
async function conversation(key: string, word: string, compact: boolean) {
  const created = await gw.call('POST', '/v1/conversations', key, { title: `about ${word}` });
  const conv = created.json.conversationId as string;
  const messages = agentTranscript(6, { tag: word });
  expect(
    (await gw.call('POST', `/v1/conversations/${conv}/messages`, key, { messages: keyed(messages), wait: true }))
      .status,
  ).toBe(200);
  if (compact)
    expect((await gw.call('POST', `/v1/conversations/${conv}/compact`, key, {})).json.status).toBe('committed');
  return conv;
}

const hits = async (key: string, word: string) =>
  (await gw.call('GET', `/v1/search?q=${word}`, key)).json.results.length;

/** Workflow ids the visibility API lists for a query (what the Temporal UI shows). */
async function visible(query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const info of temporal.workflow.list({ query })) ids.push(info.workflowId);
  return ids.sort();
}

/** Rows of the tenant (or of one conversation: its id and its sessions' ids) left in each table, read as the owner. */
async function rowsLeft(tenantId: string, conversation?: { id: string; sessionIds: string[] }) {
  const out: Record<string, number> = {};
  const tables = conversation
    ? TABLES
    : [...TABLES, 'tenant_markers', 'api_keys', 'compaction_totals', 'webhooks', 'webhook_deliveries'];
  for (const table of tables) {
    const of = !conversation
      ? sql``
      : table === 'message_state' || table === 'events'
        ? sql` AND session_id = ANY(${conversation.sessionIds})`
        : table === 'conversations'
          ? sql` AND id = ${conversation.id}`
          : sql` AND conversation_id = ${conversation.id}`;
    const r = await sql<{ n: string }>`
      SELECT count(*) AS n FROM ${sql.table(table)} WHERE tenant_id = ${tenantId}${of}`.execute(gw.testDb.db);
    out[table] = Number(r.rows[0]!.n);
  }
  return out;
}

/** The audit row of an erasure once it is completed (polled: Temporal's deletions are confirmed asynchronously). */
async function finished(tenantId: string, erasureId: number) {
  const row = async () =>
    (await gw.call('GET', `/v1/erasures?tenantId=${tenantId}`, gw.adminKey)).json.erasures.find(
      (e: { erasureId: number }) => e.erasureId === erasureId,
    );
  await expect.poll(async () => (await row())?.status, { timeout: 120_000, interval: 500 }).toBe('completed');
  return row();
}

const totalCompactions = async () =>
  Number(
    (await sql<{ n: string | null }>`SELECT sum(compactions) AS n FROM compaction_totals`.execute(gw.testDb.db))
      .rows[0]!.n ?? 0,
  );

describe('erasure', () => {
  it('erases a rotated conversation, then its tenant, leaving the others; audited; confirmed by the id', async () => {
    const a = await gw.tenant({ in_place: false, protect_first_n: 1, protect_last_n: 4 });
    const b = await gw.tenant();
    const gone = await conversation(a.key, 'wombat', true);
    const kept = await conversation(a.key, 'platypus', true);
    const other = await conversation(b.key, 'quokka', false);
    expect(await hits(a.key, 'wombat')).toBeGreaterThan(0);
    const ofGone = `TenantId = "${a.id}" AND ConversationId = "${gone}"`;
    // The conversation workflow and its compaction child; a replay workflow of its compaction (an operator's replay
    // carries only TenantId: found by its id's prefix), run to its end whatever it answers for a committed one.
    await expect.poll(() => visible(ofGone), { timeout: 30_000, interval: 250 }).toHaveLength(2);
    const compactionId = (await gw.call('GET', '/v1/compactions', a.key)).json.compactions.find(
      (c: { conversationId: string }) => c.conversationId === gone,
    ).id as string;
    await gw.stack.client.temporal.replayCompaction(a.id, compactionId).catch(() => undefined);
    const replays = `TenantId = "${a.id}" AND WorkflowType = "replayCompactionWorkflow"`;
    await expect.poll(() => visible(replays), { timeout: 30_000, interval: 250 }).toHaveLength(1);
    expect((await visible(replays))[0]).toMatch(new RegExp(`^replay:${a.id}:${compactionId}:`));
    const sessionIds = (await gw.call('GET', `/v1/conversations/${gone}/sessions`, a.key)).json.sessions.map(
      (x: { sessionId: string }) => x.sessionId,
    );
    expect(sessionIds).toHaveLength(2);
    expect((await rowsLeft(a.id, { id: gone, sessionIds })).message_state).toBeGreaterThan(25);
    const keptBefore = (await gw.call('GET', `/v1/conversations/${kept}/export`, a.key)).text;
    const countedBefore = await totalCompactions();

    // The confirmation repeats the id; only the admin key erases.
    const path = `/v1/tenants/${a.id}/conversations/${gone}`;
    for (const body of [undefined, {}, { confirm: kept }, { confirm: a.id }]) {
      const refused = await gw.call('DELETE', path, gw.adminKey, body);
      expect(refused.status).toBe(400);
      expect(refused.json.message).toMatch(/confirm/);
    }
    expect((await gw.call('DELETE', path, a.key, { confirm: gone })).status).toBe(403);
    expect(await hits(a.key, 'wombat')).toBeGreaterThan(0);

    const erased = await gw.call('DELETE', path, gw.adminKey, {
      confirm: gone,
      requestedBy: 'dpo@acme',
      reason: 'GDPR art. 17',
    });
    expect(erased.status).toBe(200);
    expect(erased.json).toMatchObject({
      scope: 'conversation',
      tenantId: a.id,
      conversationId: gone,
      requestedBy: 'dpo@acme',
      status: expect.stringMatching(/^(completed|rows_deleted)$/),
      rowsDeleted: { conversations: 1, sessions: 2, compactions: 1, sessions_unlinked: 0 },
    });
    expect(erased.json.rowsDeleted.messages).toBeGreaterThan(25);
    // Temporal deletes histories asynchronously: the audit row is completed once they are gone.
    expect((await finished(a.id, erased.json.erasureId)).workflowsDeleted).toBeGreaterThanOrEqual(3);

    // Nothing of it is readable any more; the tenant's other conversation is as it was.
    expect(await hits(a.key, 'wombat')).toBe(0);
    for (const route of ['status', 'messages', 'export', 'sessions', 'messages?archived=true'])
      expect((await gw.call('GET', `/v1/conversations/${gone}/${route}`, a.key)).status).toBe(404);
    const listed = (await gw.call('GET', '/v1/conversations', a.key)).json.conversations;
    expect(listed.map((c: { conversationId: string }) => c.conversationId)).toEqual([kept]);
    expect(Object.values(await rowsLeft(a.id, { id: gone, sessionIds })).every((n) => n === 0)).toBe(true);
    await expect.poll(() => visible(ofGone), { timeout: 30_000, interval: 250 }).toEqual([]);
    await expect.poll(() => visible(replays), { timeout: 30_000, interval: 250 }).toEqual([]);
    expect(await visible(`TenantId = "${a.id}" AND ConversationId = "${kept}"`)).toHaveLength(2);
    expect(await hits(a.key, 'platypus')).toBeGreaterThan(0);
    const keptAfter = (await gw.call('GET', `/v1/conversations/${kept}/export`, a.key)).text;
    const withoutExportTime = (jsonl: string) => jsonl.replace(/"exportedAt":"[^"]+"/, '');
    expect(withoutExportTime(keptAfter)).toEqual(withoutExportTime(keptBefore));
    expect(await totalCompactions()).toBe(countedBefore); // /metrics counters never go down

    // Erasing it again deletes nothing more, and is recorded.
    const again = await gw.call('DELETE', path, gw.adminKey, { confirm: gone });
    expect(again.json).toMatchObject({
      status: 'completed',
      rowsDeleted: { messages: 0, sessions: 0 },
      requestedBy: 'admin',
    });

    // The whole tenant, with a webhook endpoint (its rows and its delivery workflow go too).
    const hook = await gw.call('POST', '/v1/webhooks', a.key, { url: 'http://127.0.0.1:9/never' });
    expect(hook.status).toBe(201);
    const tenantPath = `/v1/tenants/${a.id}`;
    const refused = await gw.call('DELETE', tenantPath, gw.adminKey, { confirm: b.id });
    expect(refused).toMatchObject({ status: 400, json: { message: expect.stringMatching(/confirm/) } });
    const tenantErased = await gw.call('DELETE', tenantPath, gw.adminKey, { confirm: a.id });
    expect(tenantErased.json).toMatchObject({
      scope: 'tenant',
      tenantId: a.id,
      conversationId: null,
      rowsDeleted: { tenants: 1, api_keys: 1, conversations: 1, sessions: 2, webhooks: 1 },
    });
    expect((await finished(a.id, tenantErased.json.erasureId)).workflowsDeleted).toBeGreaterThanOrEqual(2);
    expect((await gw.call('GET', '/v1/conversations', a.key)).status).toBe(401);
    expect(await rowsLeft(a.id)).toEqual(Object.fromEntries(Object.keys(await rowsLeft(a.id)).map((t) => [t, 0])));
    const tenantRow = await gw.testDb.db.selectFrom('tenants').select('id').where('id', '=', a.id).execute();
    expect(tenantRow).toEqual([]);
    await expect.poll(() => visible(`TenantId = "${a.id}"`), { timeout: 30_000, interval: 250 }).toEqual([]);
    expect(await totalCompactions()).toBe(countedBefore);

    // The other tenant is untouched.
    expect(await hits(b.key, 'quokka')).toBeGreaterThan(0);
    expect((await gw.call('GET', `/v1/conversations/${other}/messages`, b.key)).json.messages).toHaveLength(25);
    expect(await visible(`TenantId = "${b.id}"`)).toHaveLength(1);

    // The audit trail: who, what, when, how many rows — no content; newest first, paged.
    const audit = await gw.call('GET', `/v1/erasures?tenantId=${a.id}`, gw.adminKey);
    expect(audit.json.erasures.map((e: { scope: string }) => e.scope)).toEqual([
      'tenant',
      'conversation',
      'conversation',
    ]);
    expect(audit.json.erasures[2]).toMatchObject({
      requestedBy: 'dpo@acme',
      reason: 'GDPR art. 17',
      requestedAt: expect.any(String),
    });
    expect(audit.text).not.toMatch(/wombat|platypus/);
    const first = await gw.call('GET', `/v1/erasures?tenantId=${a.id}&limit=2`, gw.adminKey);
    const rest = await gw.call(
      'GET',
      `/v1/erasures?tenantId=${a.id}&limit=2&cursor=${first.json.nextCursor}`,
      gw.adminKey,
    );
    expect([...first.json.erasures, ...rest.json.erasures]).toEqual(audit.json.erasures);
    expect(rest.json.nextCursor).toBeNull();
    expect((await gw.call('GET', '/v1/erasures', b.key)).status).toBe(403);
  });

  it('a tenant erasure finds its webhook and conversation workflows by id, before visibility lists them', async () => {
    const t = await gw.tenant();
    const conv = (await gw.call('POST', '/v1/conversations', t.key, {})).json.conversationId as string;
    const hook = await gw.call('POST', '/v1/webhooks', t.key, { url: 'http://127.0.0.1:9/never' });
    expect(hook.status).toBe(201);
    const webhookId = hook.json.id as string;
    // PostgreSQL names the tenant's conversations and endpoints (not one conversation's erasure: those are its own).
    const scope = await erasureScope(gw.testDb.db, { tenantId: t.id });
    expect(scope).toMatchObject({ conversationIds: [conv], webhookIds: [webhookId] });
    expect(await erasureScope(gw.testDb.db, { tenantId: t.id, conversationId: conv })).toMatchObject({
      conversationIds: [],
      webhookIds: [],
    });
    // A workflow visibility will never list under the tenant (no TenantId attribute, nobody polls its queue) stands
    // for one started a moment ago: found only because it is named.
    const unlisted = [
      webhookWorkflowId(t.id, `${webhookId}-unlisted`),
      conversationWorkflowId(t.id, `${conv}-unlisted`),
    ];
    for (const workflowId of unlisted) {
      await temporal.workflow.start('webhookDeliveryWorkflow', {
        taskQueue: 'erasure-test-unpolled',
        workflowId,
        args: [{ tenantId: t.id, webhookId }],
      });
    }
    try {
      const target = { tenantId: t.id, compactions: [] };
      const named = { ...target, webhookIds: [`${webhookId}-unlisted`], conversationIds: [`${conv}-unlisted`] };
      const found = await findWorkflows(temporal, named);
      for (const workflowId of unlisted) {
        expect(found.find((e) => e.workflowId === workflowId)).toMatchObject({ running: true });
      }
      const listedOnly = (await findWorkflows(temporal, target)).map((e) => e.workflowId);
      expect(listedOnly.filter((id) => unlisted.includes(id))).toEqual([]);
    } finally {
      for (const workflowId of unlisted) await temporal.workflow.getHandle(workflowId).terminate('test done');
    }
  });

  it('appends racing an erasure are either erased with it or refused: nothing of the conversation is left', async () => {
    const t = await gw.tenant();
    const conv = await conversation(t.key, 'echidna', false);
    const sessionIds = (await gw.call('GET', `/v1/conversations/${conv}/sessions`, t.key)).json.sessions.map(
      (x: { sessionId: string }) => x.sessionId,
    );
    const append = (i: number) =>
      gw.call('POST', `/v1/conversations/${conv}/messages`, t.key, {
        messages: keyed([{ role: 'user', content: `echidna late ${i}` }]),
      });
    const [erased, ...appends] = await Promise.all([
      gw.call('DELETE', `/v1/tenants/${t.id}/conversations/${conv}`, gw.adminKey, { confirm: conv }),
      ...Array.from({ length: 8 }, (_, i) => append(i)),
    ]);
    expect(erased.status).toBe(200);
    for (const a of appends) expect([202, 404]).toContain(a.status);
    expect(await rowsLeft(t.id, { id: conv, sessionIds })).toEqual(Object.fromEntries(TABLES.map((x) => [x, 0])));
    expect(await hits(t.key, 'echidna')).toBe(0);
    expect((await append(99)).status).toBe(404);
    await finished(t.id, erased.json.erasureId);
    const ofConv = `TenantId = "${t.id}" AND ConversationId = "${conv}"`;
    await expect.poll(() => visible(ofConv), { timeout: 30_000, interval: 250 }).toEqual([]);
  });

  it('the tenant role still cannot delete, nor read the audit trail', async () => {
    const t = await gw.tenant();
    await conversation(t.key, 'numbat', false);
    for (const table of [...TABLES, 'tenant_markers']) {
      await expect(
        withTenant(gw.testDb.db, t.id, (tx) => sql`DELETE FROM ${sql.table(table)}`.execute(tx)),
      ).rejects.toThrow(/permission denied/);
    }
    await expect(withTenant(gw.testDb.db, t.id, (tx) => sql`SELECT * FROM erasures`.execute(tx))).rejects.toThrow(
      /permission denied/,
    );
    expect(await hits(t.key, 'numbat')).toBeGreaterThan(0);
  });
});
