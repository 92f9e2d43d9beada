// A tenant's webhook endpoints and their deliveries (issue #14 §2, migrations/0021), as the tenant (row-level
// security). An endpoint has a secret (deliveries are signed with it: activities/webhooks.ts) and a dispatch cursor:
// the id of the last event of the tenant's feed handed to delivery. Each (endpoint, event) has one delivery row —
// pending, delivered or failed, with its attempts and the endpoint's last answer — which the operator reads. An
// endpoint is deleted by marking it: the tenant role never deletes.
import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database, DeliveryStatus } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite } from './writeRetry.js';

export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  createdAt: string;
  /** Events up to this id were handed to delivery. */
  dispatchedThrough: number;
}

export interface WebhookWithSecret extends Webhook {
  secret: string;
}

export interface Delivery {
  eventId: number;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  updatedAt: string;
  deliveredAt: string | null;
}

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/** Registers an endpoint; its deliveries start after the tenant's newest event (what happens from now on). */
export async function createWebhook(
  db: Kysely<Database>,
  tenantId: string,
  input: { url: string; description: string | null; secret: string | null },
): Promise<WebhookWithSecret> {
  const id = `wh_${randomBytes(8).toString('hex')}`;
  const secret = input.secret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const row = await withTenantWrite(db, tenantId, (tx) =>
    tx
      .insertInto('webhooks')
      .values({
        tenant_id: tenantId,
        id,
        url: input.url,
        secret,
        description: input.description,
        dispatched_through: sql<string>`(SELECT coalesce(max(id), 0) FROM events WHERE tenant_id = ${tenantId})`,
      })
      .returning(['created_at', 'dispatched_through'])
      .executeTakeFirstOrThrow(),
  );
  return {
    id,
    url: input.url,
    description: input.description,
    secret,
    createdAt: row.created_at.toISOString(),
    dispatchedThrough: Number(row.dispatched_through),
  };
}

export async function listWebhooks(db: Kysely<Database>, tenantId: string): Promise<Webhook[]> {
  const rows = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('webhooks')
        .select(['id', 'url', 'description', 'created_at', 'dispatched_through'])
        .where('tenant_id', '=', tenantId)
        .where('deleted_at', 'is', null)
        .orderBy('created_at')
        .execute(),
    READ_ONLY,
  );
  return rows.map((r) => ({
    id: r.id,
    url: r.url,
    description: r.description,
    createdAt: r.created_at.toISOString(),
    dispatchedThrough: Number(r.dispatched_through),
  }));
}

/** Marks the endpoint deleted (its delivery workflow ends at its next look); false when there is no such endpoint. */
export async function deleteWebhook(db: Kysely<Database>, tenantId: string, id: string): Promise<boolean> {
  const result = await withTenantWrite(db, tenantId, (tx) =>
    tx
      .updateTable('webhooks')
      .set({ deleted_at: sql`now()` })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst(),
  );
  return Number(result.numUpdatedRows) > 0;
}

/** The endpoint as its delivery needs it (secret included), or null when it is gone. */
export async function activeWebhook(
  db: Kysely<Database>,
  tenantId: string,
  id: string,
): Promise<WebhookWithSecret | null> {
  const row = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('webhooks')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst(),
    READ_ONLY,
  );
  if (!row) return null;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    secret: row.secret,
    createdAt: row.created_at.toISOString(),
    dispatchedThrough: Number(row.dispatched_through),
  };
}

/** Moves the dispatch cursor forward to `eventId` (never back). */
export async function advanceWebhook(db: Kysely<Database>, tenantId: string, id: string, eventId: number) {
  await withTenantWrite(db, tenantId, (tx) =>
    tx
      .updateTable('webhooks')
      .set({ dispatched_through: sql`greatest(dispatched_through, ${eventId}::bigint)` })
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .execute(),
  );
}

/** Records one delivery attempt's outcome (the row is created by the first attempt). */
export async function recordDelivery(
  db: Kysely<Database>,
  tenantId: string,
  key: { webhookId: string; eventId: number },
  outcome: { status: DeliveryStatus; statusCode: number | null; error: string | null; attempt: boolean },
): Promise<void> {
  await withTenantWrite(db, tenantId, (tx) =>
    tx
      .insertInto('webhook_deliveries')
      .values({
        tenant_id: tenantId,
        webhook_id: key.webhookId,
        event_id: key.eventId,
        status: outcome.status,
        attempts: outcome.attempt ? 1 : 0,
        last_status_code: outcome.statusCode,
        last_error: outcome.error,
        delivered_at: outcome.status === 'delivered' ? sql`now()` : null,
      })
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'webhook_id', 'event_id']).doUpdateSet({
          // A delivered event stays delivered (a late retry's answer changes nothing).
          status: sql`CASE WHEN webhook_deliveries.status = 'delivered' THEN 'delivered' ELSE excluded.status END`,
          attempts: sql`webhook_deliveries.attempts + excluded.attempts`,
          last_status_code: sql`coalesce(excluded.last_status_code, webhook_deliveries.last_status_code)`,
          last_error: sql`excluded.last_error`,
          delivered_at: sql`coalesce(webhook_deliveries.delivered_at, excluded.delivered_at)`,
          updated_at: sql`now()`,
        }),
      )
      .execute(),
  );
}

/** An endpoint's deliveries, newest event first. */
export async function listDeliveries(
  db: Kysely<Database>,
  tenantId: string,
  webhookId: string,
  limit: number,
): Promise<Delivery[]> {
  const rows = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('tenant_id', '=', tenantId)
        .where('webhook_id', '=', webhookId)
        .orderBy('event_id', 'desc')
        .limit(limit)
        .execute(),
    READ_ONLY,
  );
  return rows.map((r) => ({
    eventId: Number(r.event_id),
    status: r.status,
    attempts: r.attempts,
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    updatedAt: r.updated_at.toISOString(),
    deliveredAt: iso(r.delivered_at),
  }));
}
