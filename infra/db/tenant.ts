// Every tenant-scoped query runs inside a transaction that switches to the tenant role and sets app.tenant_id for
// that transaction only, so row-level security (migrations/0001) restricts it to the tenant's rows whatever the
// WHERE clause says (and forbids deletes). DESIGN.md §4. One kind of transaction holds several tenants' statements,
// each under its own tenant: a group of appends (appendGroups.ts), which sets the next tenant (`tenantSwitch`)
// before the statements of a batch of another tenant.
//
// Round trips (issue #11 item 6): BEGIN and the two settings are one simple-protocol message that the driver
// (pipelinedTransactions.ts) sends in the same flight as the transaction's first statement, so a single-statement
// transaction costs one round trip plus its COMMIT, and a read-only one (`readOnly`) one round trip: its COMMIT is
// not awaited. The settings are local to the transaction (set_config(..., true)) and end with its COMMIT or
// ROLLBACK, which PostgreSQL executes before anything the connection's next user sends.
//
// A read whose only tenant-scoped work is one call of a SECURITY DEFINER function that applies app.tenant_id itself
// (search, dc_search_messages) needs no transaction of its own: `callAsTenant` sets the tenant while PostgreSQL
// evaluates the function's argument, in a statement that is its own transaction.
import { type CompiledQuery, type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { TENANT_ID_PATTERN } from '../../contracts/http/admin.js';
import { TENANT_ROLE } from './migrations/0001_initial.js';
import { deferredStatement } from './pipelinedTransactions.js';
import type { Database } from './schema.js';

export type TenantTx = Transaction<Database>;

export interface TenantOptions {
  /** A transaction that only reads (`START TRANSACTION READ ONLY`: a write fails): no wait for its COMMIT. */
  readOnly?: boolean;
  /**
   * The transaction's statements are probes by key whose best plan does not depend on the values: each prepared
   * statement is planned once per connection (`plan_cache_mode = force_generic_plan` for this transaction), not for
   * every execution as the pool's default (infra/db/connect.ts) has it. `CUSTOM_PLANS` switches back mid-transaction.
   *
   * A plan made once is made with the statistics of that moment, and kept until an ANALYZE of its tables: made while
   * a table is still small (before its first ANALYZE), a probe by primary key can tie with another index led by the
   * tenant and read every row of the tenant on each execution until then. Measured: the conversation-row and
   * status reads planned this way cost bench:load 23 % of its ingest (1,435 → 1,105 msg/s, PostgreSQL 1.7 → 2.2 ms
   * per batch), so they are planned for their values. The append's own statements (APPEND_PLANS) share the risk
   * in a new deployment until autovacuum's first ANALYZE of conversations and sessions (after 50 rows, within a
   * minute), which makes every connection plan them again.
   */
  genericPlans?: boolean;
}

/** The options of a transaction that only reads: one round trip, its COMMIT not awaited. */
export const READ_ONLY: TenantOptions = { readOnly: true };

const TENANT_ID = new RegExp(TENANT_ID_PATTERN);

/** A tenant id the tenants table would refuse never reaches a setting (nothing is sent). */
function checkTenantId(caller: string, tenantId: string): void {
  if (typeof tenantId !== 'string' || !TENANT_ID.test(tenantId)) {
    throw new Error(`${caller}: tenantId must match ${TENANT_ID_PATTERN}`);
  }
}

/** The transaction-local setting of how prepared statements are planned (TenantOptions.genericPlans). */
const PLAN_MODE = (mode: 'force_generic_plan' | 'force_custom_plan') =>
  `set_config('plan_cache_mode', '${mode}', true)`;

/**
 * The role and the tenant, as literals: the setting travels in a simple-protocol message with BEGIN, which takes no
 * parameters. The tenant id must match the tenants table's own pattern (no quote can occur) and is quoted anyway.
 */
function tenantSettings(tenantId: string, genericPlans: boolean): string {
  const plans = genericPlans ? `, ${PLAN_MODE('force_generic_plan')}` : '';
  return `SELECT set_config('role', ${pg.escapeLiteral(TENANT_ROLE)}, true), set_config('app.tenant_id', ${pg.escapeLiteral(tenantId)}, true)${plans}`;
}

/**
 * Back to plans made for each execution's values, in a `genericPlans` transaction: for statements whose plan depends
 * on them (e.g. reads of a session's rows). Held back and sent in the flight of the transaction's next statement.
 */
export const CUSTOM_PLANS = () => deferredStatement(`SELECT ${PLAN_MODE('force_custom_plan')}`);

/**
 * In a transaction of withTenant, the tenant of the statements that follow (a group of appends of several tenants,
 * appendGroups.ts): held back like the settings of BEGIN and sent, in order, before the transaction's next statement,
 * so every statement runs under row-level security with the tenant set when it was issued. Local to the transaction,
 * as withTenant's own setting; the role stays the tenant role.
 */
export function tenantSwitch(tenantId: string): CompiledQuery {
  checkTenantId('tenantSwitch', tenantId);
  return deferredStatement(`SELECT set_config('app.tenant_id', ${pg.escapeLiteral(tenantId)}, true)`);
}

export async function withTenant<T>(
  db: Kysely<Database>,
  tenantId: string,
  fn: (tx: TenantTx) => Promise<T>,
  options: TenantOptions = {},
): Promise<T> {
  checkTenantId('withTenant', tenantId);
  const transaction = options.readOnly ? db.transaction().setAccessMode('read only') : db.transaction();
  return transaction.execute(async (tx) => {
    await tx.executeQuery(deferredStatement(tenantSettings(tenantId, options.genericPlans === true)));
    return fn(tx);
  });
}

/**
 * One statement, outside any transaction, whose tenant-scoped work is one call of a SECURITY DEFINER function that
 * applies app.tenant_id itself and refuses to run without it (dc_search_messages, migrations/0005): `statement` gets
 * `argument` back as an expression that sets app.tenant_id (and makes the transaction read only) when PostgreSQL
 * evaluates it, and must pass it to that function, whose arguments are evaluated before its body runs. A statement
 * sent outside a transaction block is a transaction of its own, so both settings (local to it) end with it, whether
 * it succeeds or fails: no BEGIN, no COMMIT, one message and one answer (issue #11 §6: a no-hit search's p95
 * 483 → 392 µs, a 1–2-character CJK search's 1.73 → 1.39 ms, interleaved on the 100k bench corpus).
 *
 * Only for that shape: the statement's own relations were planned, with the row security of the connection's role,
 * before the setting existed (the tenant role is not taken here; the function body runs as its owner either way).
 * Refused in a transaction, which the settings would outlive. The embedded server (infra/postgres/embedded.ts,
 * pglite-socket) keeps one client's messages together only inside a transaction block: this is safe there because
 * it serves one connection; with several, another client's statement could run between this one and its Sync.
 */
export async function callAsTenant<R>(
  db: Kysely<Database>,
  tenantId: string,
  argument: RawBuilder<unknown>,
  statement: (scoped: RawBuilder<unknown>) => RawBuilder<R>,
): Promise<R[]> {
  checkTenantId('callAsTenant', tenantId);
  if (db.isTransaction) {
    throw new Error('callAsTenant: a statement of its own; in a transaction its settings would outlive it');
  }
  const scoped = sql`(CASE WHEN set_config('transaction_read_only', 'on', true) IS NULL THEN NULL
                           WHEN set_config('app.tenant_id', ${tenantId}, true) IS NULL THEN NULL
                           ELSE ${argument} END)`;
  return (await statement(scoped).execute(db)).rows;
}
