// Every tenant-scoped query runs inside a transaction that switches to the tenant role and sets app.tenant_id for
// that transaction only, so row-level security (migrations/0001) restricts it to the tenant's rows whatever the
// WHERE clause says (and forbids deletes).
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './schema.js';

export type TenantTx = Transaction<Database>;

export async function withTenant<T>(
  db: Kysely<Database>,
  tenantId: string,
  fn: (tx: TenantTx) => Promise<T>,
): Promise<T> {
  if (!tenantId) throw new Error('withTenant: tenantId is required');
  return db.transaction().execute(async (tx) => {
    // One round trip: `role` is a setting too (SET LOCAL ROLE), both local to this transaction.
    await sql`SELECT set_config('role', 'dc_tenant', true), set_config('app.tenant_id', ${tenantId}, true)`.execute(tx);
    return fn(tx);
  });
}
