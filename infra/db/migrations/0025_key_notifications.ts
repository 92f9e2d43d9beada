// 0025: a gateway may keep the keys it resolved (infra/db/keyCache.ts) because PostgreSQL tells it when one may have
// changed. Never edit a migration that has landed.
//
// Every UPDATE or DELETE of an API key (a revocation, a rotation's scheduled revocation, a tenant's erasure) and of a
// tenant (its policy, whose `limits` travel with a resolved key) sends `NOTIFY dc_keys, '<tenant id>'` when its
// transaction commits, whoever writes it. A new key needs no notice: a gateway that does not know it looks it up.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION dc_notify_key_change() RETURNS trigger
      LANGUAGE plpgsql SET search_path = pg_catalog AS $$
    BEGIN
      -- TG_ARGV[0]: the column that holds the tenant id.
      PERFORM pg_notify('dc_keys', to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> TG_ARGV[0]);
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER api_keys_notify AFTER UPDATE OR DELETE ON api_keys
      FOR EACH ROW EXECUTE FUNCTION dc_notify_key_change('tenant_id')`.execute(db);
  await sql`
    CREATE TRIGGER tenants_notify AFTER UPDATE OR DELETE ON tenants
      FOR EACH ROW EXECUTE FUNCTION dc_notify_key_change('id')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER tenants_notify ON tenants`.execute(db);
  await sql`DROP TRIGGER api_keys_notify ON api_keys`.execute(db);
  await sql`DROP FUNCTION dc_notify_key_change()`.execute(db);
}
