// Transactions that cost no round trip of their own (issue #11 item 6, DESIGN.md §4): kysely's PostgreSQL driver, with
// the opening of a transaction held back and sent in the same network flight as its first statement, over a `pg` pool
// in pipeline mode (infra/db/connect.ts). withTenant (infra/db/tenant.ts) uses it so that BEGIN, the tenant role and
// app.tenant_id travel with the first query: a single-statement transaction is one round trip plus its COMMIT, and a
// read-only one waits for no COMMIT at all.
//
// Order is what makes it safe: PostgreSQL executes a connection's messages in the order they arrive, so the held-back
// prelude (BEGIN; the deferred statements) runs before the statement it travels with, and a read-only transaction's
// COMMIT (sent, not awaited) runs before anything the connection's next user sends — settings local to the
// transaction end with it, whoever holds the connection next.
//
// The prelude and the statement it travels with leave in one write to the socket (pg's socket is corked while both
// are submitted): one wake-up of the server's backend, not two.
//
// A statement can also be queued (`pipelined`, queuedStatements.ts): it travels in the flight of the transaction's
// next statement or of its COMMIT, so a writer whose next statements do not depend on each other's results pays one
// round trip for them all (the append's insert, its totals and the COMMIT: infra/db/conversationAppend.ts).
import {
  type AbortableOperationOptions,
  CompiledQuery,
  type ControlConnectionProvider,
  type DatabaseConnection,
  PostgresDialect,
  type PostgresDialectConfig,
  PostgresDriver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { type Queued, takeQueued } from './queuedStatements.js';

/** What PostgresDriver.acquireConnection returns (kysely does not export its class). */
type PostgresConnection = Parameters<PostgresDriver['rollbackTransaction']>[0];

const deferrable = new WeakSet<CompiledQuery>();
/** A pg client's socket, as far as a flight needs it (pg's Client keeps it as `connection.stream`). */
interface CorkableClient {
  connection?: { stream?: { cork?: () => void; uncork?: () => void } };
}

/** The clients whose sockets hold the flight being written (`inFlight`); null outside one. */
let corked: Set<CorkableClient> | null = null;

/**
 * Runs `write`, which submits statements (pg writes each to its socket as it is submitted, in pipeline mode), with
 * every socket it writes to corked: a flight leaves as one write instead of one per statement. Each write to a local
 * socket wakes the server's backend; fewer wake-ups cost both sides less CPU.
 */
function inFlight(write: () => void): void {
  if (corked) {
    write();
    return;
  }
  const clients = new Set<CorkableClient>();
  corked = clients;
  try {
    write();
  } finally {
    corked = null;
    for (const client of clients) client.connection?.stream?.uncork?.();
  }
}

/** Called by a pg client as a statement is submitted (preparedStatements.ts): inside a flight, corks its socket. */
export function joinFlight(client: CorkableClient): void {
  if (!corked || corked.has(client)) return;
  const stream = client.connection?.stream;
  if (!stream?.cork || !stream.uncork) return;
  stream.cork();
  corked.add(client);
}

/**
 * A parameterless statement whose result nobody reads, meant for settings local to a transaction. Executed first in
 * a transaction of this driver, it is held back and sent with BEGIN as one simple-protocol message
 * (`BEGIN; <statement>`), in the flight of the transaction's first other statement; if BEGIN runs, the statement runs
 * inside that transaction or aborts it, and every statement after it then fails. Executed later in the transaction,
 * it is held back likewise and sent in the flight of the next statement, after any statement queued (`pipelined`)
 * before it; if the transaction ends first, it is never sent (nothing was left for it to act on). Outside a
 * transaction it is an ordinary statement.
 */
export function deferredStatement(sqlText: string): CompiledQuery {
  const query = CompiledQuery.raw(sqlText, []);
  deferrable.add(query);
  return query;
}

/** The statement that opens a transaction with these settings (as kysely's PostgresDriver writes it). */
function beginStatement(settings: TransactionSettings): string {
  if (!settings.isolationLevel && !settings.accessMode) return 'begin';
  const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
  return `start transaction${isolation}${settings.accessMode ? ` ${settings.accessMode}` : ''}`;
}

/** A pooled connection with the state of its current transaction. */
class PipelinedConnection implements DatabaseConnection {
  /** Statements of the opened transaction not sent yet (BEGIN first); null once sent or outside a transaction. */
  prelude: string[] | null = null;
  /**
   * Statements of the opened transaction sent with its next statement, in order: deferred ones (`deferredStatement`,
   * text) and queued ones (`pipelined`).
   */
  held: Array<string | Queued> = [];
  /** Between BEGIN (held back or sent) and COMMIT or ROLLBACK. */
  inTransaction = false;
  readOnly = false;

  constructor(readonly inner: PostgresConnection) {}

  // PostgresConnection takes no per-query options (cancellation goes through cancelQuery).
  async executeQuery<R>(query: CompiledQuery, _options?: AbortableOperationOptions): Promise<QueryResult<R>> {
    if (this.inTransaction) {
      if (deferrable.has(query)) {
        // After the statements queued before it, whether or not the prelude left yet.
        if (this.prelude && this.held.length === 0) this.prelude.push(query.sql);
        else this.held.push(query.sql);
        return { rows: [] };
      }
      const queued = takeQueued(query);
      if (queued) {
        this.held.push(queued);
        return { rows: [] };
      }
    }
    if (this.prelude === null && this.held.length === 0) return this.inner.executeQuery<R>(query);
    const [result] = await this.send([query]);
    return result as QueryResult<R>;
  }

  /**
   * Writes the held-back prelude and statements (if any) and then `queries` to the socket, as one write (`inFlight`),
   * before awaiting any answer (pg in pipeline mode), then their results in order. Consecutive texts held back travel
   * as one simple-protocol message. The first failure is the one that explains (a failed prelude has aborted the
   * transaction, or never opened it; a failed statement has aborted it): it is thrown once all have answered.
   */
  async send(queries: readonly CompiledQuery[]): Promise<QueryResult<unknown>[]> {
    const items = [...(this.prelude ?? []), ...this.held];
    this.prelude = null;
    this.held = [];
    const sent: Array<{ answer: Promise<QueryResult<unknown>>; queued?: Queued }> = [];
    inFlight(() => {
      let texts: string[] = [];
      const sendTexts = () => {
        if (texts.length > 0) sent.push({ answer: this.inner.executeQuery(CompiledQuery.raw(texts.join('; '), [])) });
        texts = [];
      };
      for (const item of items) {
        if (typeof item === 'string') {
          texts.push(item);
          continue;
        }
        sendTexts();
        item.sent = true;
        sent.push({ answer: this.inner.executeQuery(item.query), queued: item });
      }
      sendTexts();
      for (const query of queries) sent.push({ answer: this.inner.executeQuery(query) });
    });
    const settled = await Promise.allSettled(sent.map((s) => s.answer));
    settled.forEach((outcome, i) => {
      sent[i]?.queued?.settle(outcome);
    });
    const failed = settled.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    return settled
      .slice(sent.length - queries.length)
      .map((outcome) => (outcome as PromiseFulfilledResult<QueryResult<unknown>>).value);
  }

  /** Statements queued by `pipelined` wait to be sent. */
  get queued(): boolean {
    return this.held.some((item) => typeof item !== 'string');
  }

  async *streamQuery<R>(
    query: CompiledQuery,
    chunkSize: number,
    _options?: AbortableOperationOptions,
  ): AsyncIterableIterator<QueryResult<R>> {
    await this.flush();
    yield* this.inner.streamQuery<R>(query, chunkSize);
  }

  /** Sends the held-back statements on their own (before a stream). */
  async flush(): Promise<void> {
    if (this.prelude !== null || this.held.length > 0) await this.send([]);
  }

  /**
   * The transaction ends: its statements held back are dropped (a queued one's result rejects); the next user
   * starts afresh.
   */
  settle(): void {
    for (const item of this.held) {
      if (typeof item !== 'string') {
        item.settle({
          status: 'rejected',
          reason: new Error('not sent: the transaction ended before its next flight'),
        });
      }
    }
    this.prelude = null;
    this.held = [];
    this.inTransaction = false;
  }

  async cancelQuery(control: ControlConnectionProvider): Promise<void> {
    await this.inner.cancelQuery?.(control);
  }

  async killSession(control: ControlConnectionProvider): Promise<void> {
    await this.inner.killSession?.(control);
  }

  async collectSessionInfo(): Promise<void> {
    await this.inner.collectSessionInfo?.();
  }
}

/**
 * kysely's PostgresDriver, with BEGIN held back until the transaction's first statement (see the top of this file).
 * COMMIT of a transaction that sent nothing sends nothing. COMMIT of a transaction with statements queued
 * (`pipelined`) travels in their flight. COMMIT of a read-only transaction is sent and not awaited: there is nothing
 * to make durable, the results are complete, and the connection's next statements queue behind it. Every other COMMIT
 * and ROLLBACK is awaited as before.
 */
export class PipelinedPostgresDriver extends PostgresDriver {
  readonly #wrappers = new WeakMap<PostgresConnection, PipelinedConnection>();

  override async acquireConnection(
    ...args: Parameters<PostgresDriver['acquireConnection']>
  ): Promise<DatabaseConnection> {
    const inner = (await super.acquireConnection(...args)) as PostgresConnection;
    let wrapper = this.#wrappers.get(inner);
    if (!wrapper) {
      wrapper = new PipelinedConnection(inner);
      this.#wrappers.set(inner, wrapper);
    }
    wrapper.settle();
    return wrapper;
  }

  override async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const wrapper = connection as PipelinedConnection;
    wrapper.settle();
    await super.releaseConnection(wrapper.inner);
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const wrapper = connection as PipelinedConnection;
    wrapper.prelude = [beginStatement(settings)];
    wrapper.held = [];
    wrapper.inTransaction = true;
    wrapper.readOnly = settings.accessMode === 'read only';
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const wrapper = connection as PipelinedConnection;
    if (wrapper.queued) {
      // The queued statements travel with the COMMIT. One that fails has aborted the transaction, which the COMMIT
      // then rolls back: its error is thrown (kysely's rollback that follows finds no transaction, a warning).
      try {
        await wrapper.send([CompiledQuery.raw('commit', [])]);
      } finally {
        wrapper.settle();
      }
      return;
    }
    const opened = wrapper.prelude === null;
    wrapper.settle();
    if (!opened) return; // never opened
    if (!wrapper.readOnly) return super.commitTransaction(wrapper.inner);
    // The only failure left is a lost connection, which the pool discards on its own.
    wrapper.inner.executeQuery(CompiledQuery.raw('commit', [])).catch(() => undefined);
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const wrapper = connection as PipelinedConnection;
    const opened = wrapper.prelude === null;
    wrapper.settle();
    if (!opened) return; // never opened
    await super.rollbackTransaction(wrapper.inner);
  }
}

/** kysely's PostgresDialect with the driver above. */
export class PipelinedPostgresDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;

  constructor(config: PostgresDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): PipelinedPostgresDriver {
    return new PipelinedPostgresDriver(this.#config);
  }
}
