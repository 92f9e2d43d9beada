// 0003: tenant API keys for the HTTP gateway (DESIGN.md §6: bearer key per tenant, stored hashed).
// Owner-only table: the gateway resolves a key to its tenant before any tenant-scoped transaction exists.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants (id),
      key_hash text NOT NULL UNIQUE,
      label text,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )`.execute(db);
  await sql`CREATE INDEX api_keys_tenant ON api_keys (tenant_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS api_keys`.execute(db);
}
