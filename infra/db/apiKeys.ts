// Tenant API keys: generated once, shown once, stored as a SHA-256 hash (the key itself has 256 random bits, so a
// fast hash is enough: there is nothing to brute-force).
import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

const KEY_PREFIX = 'dctx_';

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export interface IssuedKey {
  id: string;
  tenantId: string;
  key: string;
}

export async function issueApiKey(
  db: Kysely<Database>,
  tenantId: string,
  label: string | null = null,
): Promise<IssuedKey> {
  const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = randomBytes(8).toString('hex');
  await db
    .insertInto('api_keys')
    .values({ id, tenant_id: tenantId, key_hash: hashApiKey(key), label })
    .execute();
  return { id, tenantId, key };
}

/** The tenant a (non-revoked) key belongs to, or null. */
export async function tenantForApiKey(db: Kysely<Database>, key: string): Promise<string | null> {
  if (!key.startsWith(KEY_PREFIX)) return null;
  const row = await db
    .selectFrom('api_keys')
    .select('tenant_id')
    .where('key_hash', '=', hashApiKey(key))
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row?.tenant_id ?? null;
}
