// Named prepared statements for the statements a process runs again and again (issue #11: CPU per message). kysely
// sends every statement unnamed, so PostgreSQL parses and analyses it on each execution. A pg client of this class
// gives a statement a name from its second execution on: each connection then parses it once. The pool still has
// it planned for its values on every execution (plan_cache_mode=force_custom_plan, infra/db/connect.ts): a generic
// plan was far worse for some reads. A transaction of probes by key opts out (`genericPlans`, infra/db/tenant.ts):
// the append's statements are planned once per connection, and again whenever ANALYZE changes the statistics.
// PostgreSQL re-validates a prepared statement on its own when a table, an index or the role changes (row-level
// security included).
//
// Bounds: only statements with parameters are named (a parameterless text carries its values as literals, e.g. the
// tenant prelude of infra/db/tenant.ts, and may hold several statements); at most MAX_NAMED texts per process, so a
// connection holds at most that many; the texts seen once are forgotten beyond MAX_SEEN.
//
// A schema change under a prepared statement (a rolling migration adding a column under `SELECT *`) fails it once
// with `cached plan must not change result type` (0A000), and a statement the server forgot fails with 26000: both
// start a new generation of names, so every statement is parsed again, and writeRetry.ts retries the transaction.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { joinFlight } from './pipelinedTransactions.js';

const MAX_NAMED = 256;
const MAX_SEEN = 4_096;

/** The errors after which the server's prepared statements no longer match this process's names. */
export function isStalePreparedStatement(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code === '26000') return typeof message === 'string' && /prepared statement/i.test(message);
  return code === '0A000' && typeof message === 'string' && /cached plan must not change result type/i.test(message);
}

/** The process's statement names: a text seen twice gets one; a stale statement starts a new generation. */
class StatementNames {
  private generation = 0;
  private readonly named = new Map<string, string>();
  private readonly seen = new Set<string>();

  nameFor(text: string): string | undefined {
    const name = this.named.get(text);
    if (name !== undefined) return name;
    if (this.named.size >= MAX_NAMED) return undefined;
    if (!this.seen.has(text)) {
      if (this.seen.size >= MAX_SEEN) this.seen.clear();
      this.seen.add(text);
      return undefined;
    }
    this.seen.delete(text);
    const fresh = `dc${this.generation}_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    this.named.set(text, fresh);
    return fresh;
  }

  renew(): void {
    this.generation++;
    this.named.clear();
  }
}

const names = new StatementNames();

type QueryCallback = (err: Error | null, result?: pg.QueryResult) => void;

/** pg's client with the naming above, for `new pg.Pool({ Client: PreparingClient })` (infra/db/connect.ts). */
export class PreparingClient extends pg.Client {
  // pg's overloads are many; this only rewrites `query(text, values)` with values and no callback (kysely's call).
  override query(config: any, values?: any, callback?: any): any {
    joinFlight(this as unknown as Parameters<typeof joinFlight>[0]);
    if (typeof config === 'string' && Array.isArray(values) && values.length > 0 && callback === undefined) {
      const name = names.nameFor(config);
      if (name !== undefined) {
        const pending = super.query({ name, text: config, values }) as unknown as Promise<pg.QueryResult>;
        return pending.catch((error: unknown) => {
          if (isStalePreparedStatement(error)) names.renew();
          throw error;
        });
      }
    }
    return super.query(config, values, callback as QueryCallback);
  }
}
