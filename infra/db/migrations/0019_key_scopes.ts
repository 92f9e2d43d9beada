// 0019: API key scopes and scheduled revocation (issue #14 §4). Never edit a migration that has landed; add a new one.
//
// - `api_keys.scope`: `full` (every tenant route, the default for every key issued before) or `read` (the routes that
//   store nothing: GET routes of the tenant API and search); the gateway answers 403 naming the scope otherwise.
// - `api_keys.revoked_at` may now lie in the future: a rotated key stays valid until then (the overlap the caller
//   gave), so clients switch without downtime. The lookup keeps using the unique `key_hash` index; the listing of a
//   tenant's keys uses `api_keys_tenant` (0003).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'full'
              CONSTRAINT api_keys_scope CHECK (scope IN ('full', 'read'))`.execute(db);
  // The key a rotation replaced (null for a key issued directly): the listing shows which key took over from which.
  await sql`ALTER TABLE api_keys ADD COLUMN replaces text REFERENCES api_keys (id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE api_keys DROP COLUMN IF EXISTS replaces, DROP COLUMN IF EXISTS scope`.execute(db);
}
