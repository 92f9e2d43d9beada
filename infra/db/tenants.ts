// Tenants (owner connection: the tenant role may only read `tenants`), their policy override and their one-time
// notice markers (SPEC §1.4 tenant, §4.5 `codex_gpt55_autoraise_notice`).
import { type Kysely, sql } from 'kysely';
import type { Database, TenantRow } from './schema.js';
import { READ_ONLY, withTenant } from './tenant.js';
import { withTenantWrite, withWriteRetry } from './writeRetry.js';

export interface NewTenant {
  id: string;
  name: string;
}

/** Idempotent: an existing tenant is returned as stored (its name is not changed). Owner connection. */
export function ensureTenant(db: Kysely<Database>, tenant: NewTenant): Promise<TenantRow> {
  return withWriteRetry(() =>
    db.transaction().execute(async (tx) => {
      const inserted = await tx
        .insertInto('tenants')
        .values({ id: tenant.id, name: tenant.name })
        .onConflict((oc) => oc.column('id').doNothing())
        .returningAll()
        .executeTakeFirst();
      return (
        inserted ?? (await tx.selectFrom('tenants').selectAll().where('id', '=', tenant.id).executeTakeFirstOrThrow())
      );
    }),
  );
}

export function getTenant(db: Kysely<Database>, tenantId: string): Promise<TenantRow | undefined> {
  return db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
}

export interface TenantPolicy {
  /** The raw snake_case override object, as stored (validated by the caller). */
  policy: Record<string, unknown>;
  version: number;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Stores the override object and bumps `policy_version`. Storing the policy already stored changes nothing (so a
 * retried call does not bump twice). Throws when the tenant does not exist. Owner connection.
 */
export async function setTenantPolicy(
  db: Kysely<Database>,
  tenantId: string,
  policy: Record<string, unknown>,
): Promise<TenantPolicy> {
  if (!isPlainObject(policy)) throw new TypeError('setTenantPolicy: policy must be a plain object');
  const json = JSON.stringify(policy);
  return withWriteRetry(() =>
    db.transaction().execute(async (tx) => {
      // The request limits (`limits`, issue #14 §5) are read by the gateway with each key: a change to them alone
      // leaves the conversations' quiet rules as they are.
      const changed = await sql<{ compression_changed: boolean }>`
        WITH old AS (SELECT policy FROM tenants WHERE id = ${tenantId} FOR UPDATE)
        UPDATE tenants t SET policy = ${json}::jsonb, policy_version = t.policy_version + 1
          FROM old
         WHERE t.id = ${tenantId} AND old.policy IS DISTINCT FROM ${json}::jsonb
        RETURNING (old.policy - 'limits') IS DISTINCT FROM (${json}::jsonb - 'limits') AS compression_changed`.execute(
        tx,
      );
      if (changed.rows[0]?.compression_changed) {
        // The quiet rules of the tenant's conversations were computed with the old policy (migration 0009).
        await tx
          .updateTable('conversations')
          .set({ notify_epoch: sql`notify_epoch + 1`, notified_since: null })
          .where('tenant_id', '=', tenantId)
          .execute();
      }
      const row = await tx
        .selectFrom('tenants')
        .select(['policy', 'policy_version'])
        .where('id', '=', tenantId)
        .executeTakeFirst();
      if (!row) throw new Error(`Tenant ${tenantId} not found`);
      return { policy: row.policy, version: row.policy_version };
    }),
  );
}

export async function getTenantPolicy(db: Kysely<Database>, tenantId: string): Promise<TenantPolicy | undefined> {
  const row = await db
    .selectFrom('tenants')
    .select(['policy', 'policy_version'])
    .where('id', '=', tenantId)
    .executeTakeFirst();
  return row && { policy: row.policy, version: row.policy_version };
}

export async function getTenantMarker(
  db: Kysely<Database>,
  tenantId: string,
  key: string,
): Promise<string | undefined> {
  const row = await withTenant(
    db,
    tenantId,
    (tx) =>
      tx
        .selectFrom('tenant_markers')
        .select('value')
        .where('tenant_id', '=', tenantId)
        .where('key', '=', key)
        .executeTakeFirst(),
    READ_ONLY,
  );
  return row?.value;
}

/** Inserts or overwrites the marker. */
export function setTenantMarker(db: Kysely<Database>, tenantId: string, key: string, value: string): Promise<void> {
  return withTenantWrite(db, tenantId, async (tx) => {
    await tx
      .insertInto('tenant_markers')
      .values({ tenant_id: tenantId, key, value })
      .onConflict((oc) => oc.columns(['tenant_id', 'key']).doUpdateSet({ value, updated_at: sql`now()` }))
      .execute();
  });
}

/**
 * Sets the marker to `value` unless it already holds it; true only for the one caller that changed it. Concurrent
 * callers are serialised on the row, so a one-time notice (SPEC §4.5) is shown once even when two conversations of
 * the tenant start at the same moment.
 */
export function claimTenantMarker(
  db: Kysely<Database>,
  tenantId: string,
  key: string,
  value: string,
): Promise<boolean> {
  return withTenantWrite(db, tenantId, async (tx) => {
    const row = await tx
      .insertInto('tenant_markers')
      .values({ tenant_id: tenantId, key, value })
      .onConflict((oc) =>
        oc
          .columns(['tenant_id', 'key'])
          .doUpdateSet({ value, updated_at: sql`now()` })
          .where('tenant_markers.value', 'is distinct from', value),
      )
      .returning('key')
      .executeTakeFirst();
    return row !== undefined;
  });
}
