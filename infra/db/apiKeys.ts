// Tenant API keys (issue #14 §4): generated once, shown once, stored as a SHA-256 hash (the key itself has 256 random
// bits, so a fast hash is enough: there is nothing to brute-force). Owner connection: the gateway resolves a key to its
// tenant before any tenant-scoped transaction exists. A gateway keeps a key it resolved only while PostgreSQL notifies
// it of every change (keyCache.ts, migrations/0025), so a revocation holds at once on every gateway; `revoked_at` in
// the future is a rotation's overlap (migrations/0019).
import { createHash, randomBytes } from 'node:crypto';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { KeyScope } from '../../contracts/http/admin.js';
import type { ApiKeysTable, Database } from './schema.js';

const KEY_PREFIX = 'dctx_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export interface IssuedKey {
  id: string;
  tenantId: string;
  key: string;
  label: string | null;
  scope: KeyScope;
}

/** A key as the admin API lists it: never the key or its hash. */
export interface ListedKey {
  id: string;
  label: string | null;
  scope: KeyScope;
  createdAt: Date;
  revokedAt: Date | null;
  replaces: string | null;
}

/** What a request's key resolves to: its tenant, itself, and the tenant's stored `limits` policy (raw). */
export interface ResolvedKey {
  tenantId: string;
  keyId: string;
  scope: KeyScope;
  limits: unknown;
  /** A revocation is scheduled (a rotation's overlap): the key stops working at a time, with no notice then. */
  expires: boolean;
}

type Executor = Pick<Kysely<Database>, 'insertInto'>;

const LISTED_COLUMNS = ['id', 'label', 'scope', 'created_at', 'revoked_at', 'replaces'] as const;

function listed(row: Pick<Selectable<ApiKeysTable>, (typeof LISTED_COLUMNS)[number]>): ListedKey {
  return {
    id: row.id,
    label: row.label,
    scope: row.scope,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    replaces: row.replaces,
  };
}

/** `revoked_at` after a revocation `seconds` from now: never later than a revocation already set. */
const revokedIn = (seconds: number) =>
  sql<Date>`least(coalesce(revoked_at, 'infinity'::timestamptz), now() + make_interval(secs => ${seconds}))`;

/** Still valid: not revoked, or revoked at a time still to come (a rotation's overlap). */
const stillValid = sql<boolean>`(revoked_at IS NULL OR revoked_at > now())`;

function insertKey(
  db: Executor,
  tenantId: string,
  options: { label: string | null; scope: KeyScope; replaces?: string },
): Promise<IssuedKey> {
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = randomBytes(8).toString('hex');
  const { label, scope } = options;
  return db
    .insertInto('api_keys')
    .values({ id, tenant_id: tenantId, key_hash: hashApiKey(key), label, scope, replaces: options.replaces ?? null })
    .execute()
    .then(() => ({ id, tenantId, key, label, scope }));
}

export function issueApiKey(
  db: Kysely<Database>,
  tenantId: string,
  label: string | null = null,
  scope: KeyScope = 'full',
): Promise<IssuedKey> {
  return insertKey(db, tenantId, { label, scope });
}

/** The hash a presented key is stored and looked up by; null for a string that is no key of ours. */
export function presentedKeyHash(key: string): string | null {
  return key.startsWith(KEY_PREFIX) ? hashApiKey(key) : null;
}

/**
 * The key of a request, if it is valid now: its tenant, id, scope and the tenant's `limits` policy, in one statement
 * (the same round trip the key check always took, so limits cost the hot path nothing extra).
 */
export function resolveApiKey(db: Kysely<Database>, key: string): Promise<ResolvedKey | null> {
  const hash = presentedKeyHash(key);
  return hash === null ? Promise.resolve(null) : resolveKeyHash(db, hash);
}

/** resolveApiKey for the hash of the presented key (presentedKeyHash), e.g. one a cache already computed. */
export async function resolveKeyHash(db: Kysely<Database>, hash: string): Promise<ResolvedKey | null> {
  const row = await db
    .selectFrom('api_keys as k')
    .innerJoin('tenants as t', 't.id', 'k.tenant_id')
    .select([
      'k.tenant_id',
      'k.id',
      'k.scope',
      sql<unknown>`t.policy -> 'limits'`.as('limits'),
      sql<boolean>`k.revoked_at IS NOT NULL`.as('expires'),
    ])
    .where('k.key_hash', '=', hash)
    .where(sql<boolean>`(k.revoked_at IS NULL OR k.revoked_at > now())`)
    .executeTakeFirst();
  return row
    ? { tenantId: row.tenant_id, keyId: row.id, scope: row.scope, limits: row.limits ?? null, expires: row.expires }
    : null;
}

/** A tenant's keys, oldest first (revoked ones included, so an operator sees what was revoked when). */
export async function listApiKeys(db: Kysely<Database>, tenantId: string): Promise<ListedKey[]> {
  const rows = await db
    .selectFrom('api_keys')
    .select(LISTED_COLUMNS)
    .where('tenant_id', '=', tenantId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(listed);
}

/**
 * Revokes a key of the tenant `afterSeconds` from now (0: at once). A key already revoked keeps the earlier time;
 * one revoked later (an overlap) is brought forward. Null when the tenant has no such key.
 */
export async function revokeApiKey(
  db: Kysely<Database>,
  tenantId: string,
  keyId: string,
  afterSeconds = 0,
): Promise<ListedKey | null> {
  const row = await scheduleRevocation(db, tenantId, keyId, afterSeconds, { onlyValid: false });
  return row ? listed(row) : null;
}

/** Sets the key's revocation `seconds` from now (keeping an earlier one); `onlyValid`: unless it no longer works. */
function scheduleRevocation(
  db: Pick<Kysely<Database>, 'updateTable'>,
  tenantId: string,
  keyId: string,
  seconds: number,
  options: { onlyValid: boolean },
) {
  const update = db
    .updateTable('api_keys')
    .set({ revoked_at: revokedIn(seconds) })
    .where('tenant_id', '=', tenantId)
    .where('id', '=', keyId);
  return (options.onlyValid ? update.where(stillValid) : update).returning(LISTED_COLUMNS).executeTakeFirst();
}

/**
 * Rotates a key: a new key with the same label and scope, and the old one revoked `overlapSeconds` from now (0: at
 * once; never later than a revocation already set), in one transaction. `unknown` when the tenant has no such key,
 * `revoked` when it no longer works.
 */
export async function rotateApiKey(
  db: Kysely<Database>,
  tenantId: string,
  keyId: string,
  overlapSeconds = 0,
): Promise<{ issued: IssuedKey; revokedAt: Date } | 'unknown' | 'revoked'> {
  return db.transaction().execute(async (tx) => {
    const old = await scheduleRevocation(tx, tenantId, keyId, overlapSeconds, { onlyValid: true });
    if (!old?.revoked_at) {
      const exists = await tx
        .selectFrom('api_keys')
        .select('id')
        .where('tenant_id', '=', tenantId)
        .where('id', '=', keyId)
        .executeTakeFirst();
      return exists ? 'revoked' : 'unknown';
    }
    const issued = await insertKey(tx, tenantId, { label: old.label, scope: old.scope, replaces: keyId });
    return { issued, revokedAt: old.revoked_at };
  });
}
