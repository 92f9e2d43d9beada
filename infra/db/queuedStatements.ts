// Statements queued in a transaction (issue #11, DESIGN.md §4): `pipelined` hands a statement to the transaction's
// connection (infra/db/pipelinedTransactions.ts), which sends it in the flight of the transaction's next statement or
// of its COMMIT; its result comes back when that flight is answered. A writer whose next statements do not depend on
// each other's results pays one round trip for them all.
import type { CompiledQuery, QueryResult } from 'kysely';

/** A statement queued by `pipelined`, waiting for the flight it will travel in. */
export interface Queued {
  query: CompiledQuery;
  /** Written to the socket, or settled without it: its result can be awaited. */
  sent: boolean;
  settle(outcome: PromiseSettledResult<QueryResult<unknown>>): void;
}

/** The statements `pipelined` handed to a transaction and not yet taken by its connection. */
const toQueue = new WeakMap<CompiledQuery, Queued>();

/** The connection takes a statement `pipelined` handed to its transaction (pipelinedTransactions.ts), or none. */
export function takeQueued(query: CompiledQuery): Queued | undefined {
  const queued = toQueue.get(query);
  if (queued) toQueue.delete(query);
  return queued;
}

/**
 * What `pipelined` gives back: the statement's result, once the flight it travelled in has been answered. Reading
 * `result` before the statement was sent throws at once: awaiting it then would wait forever.
 */
export interface PipelinedStatement<R> {
  readonly result: Promise<QueryResult<R>>;
}

/**
 * Queues `query` in the transaction and returns at once: it is sent in the flight of the transaction's next statement,
 * or of its COMMIT, before that statement and in the order queued. `result` settles when that flight is answered;
 * awaiting it before then never ends (the transaction's statements run one at a time), so read it after the next
 * statement, or after the transaction. If the statement fails it aborts the transaction: the statement it travels
 * with fails with its error (a COMMIT, which PostgreSQL then turns into a rollback, too). If the transaction ends
 * before it is sent, `result` rejects. Outside a transaction of this driver the statement runs at once.
 */
export async function pipelined<R>(
  tx: { executeQuery(query: CompiledQuery): Promise<QueryResult<unknown>> },
  query: CompiledQuery<R>,
): Promise<PipelinedStatement<R>> {
  let resolved!: (outcome: PromiseSettledResult<QueryResult<unknown>>) => void;
  const result = new Promise<QueryResult<R>>((resolve, reject) => {
    resolved = (outcome) =>
      outcome.status === 'fulfilled' ? resolve(outcome.value as QueryResult<R>) : reject(outcome.reason);
  });
  // Its failure is also the flight's, thrown there: a caller that never reads `result` leaves no unhandled rejection.
  result.catch(() => undefined);
  const own: CompiledQuery = { ...query };
  const queued: Queued = {
    query: own,
    sent: false,
    settle: (outcome) => {
      queued.sent = true;
      resolved(outcome);
    },
  };
  toQueue.set(own, queued);
  try {
    const direct = await tx.executeQuery(own);
    if (toQueue.delete(own)) queued.settle({ status: 'fulfilled', value: direct });
  } catch (error) {
    if (toQueue.delete(own)) queued.settle({ status: 'rejected', reason: error });
    throw error;
  }
  return {
    get result() {
      if (!queued.sent) {
        throw new Error("pipelined: the statement's result was read before the flight it travels in was sent");
      }
      return result;
    },
  };
}
