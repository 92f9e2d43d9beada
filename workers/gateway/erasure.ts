// One erasure, end to end (issue #14 §6 data lifecycle): read the ids of the target's sessions and compactions, find
// its Temporal workflows and terminate the running ones (nothing of it runs while its rows go), delete its PostgreSQL
// rows with the audit row in one transaction (infra/db/erasure.ts), look for workflows again (one started meanwhile,
// e.g. by a request in flight) and delete every execution's history, then mark the audit row completed — at once when
// Temporal confirms the deletions within ~10 s, else in the background (the answer then says `rows_deleted`). Idempotent:
// erasing again what is already gone deletes nothing more and records that it was asked. Temporal unreachable before
// the rows are deleted: 503 and nothing is deleted; after: the audit row stays `rows_deleted` and a retry finishes.
import type { Client } from '@temporalio/client';
import type { Kysely, Selectable } from 'kysely';
import { isTemporalOutage, TemporalUnavailableError } from '../../clients/conversationClient.js';
import { deleteWorkflows, findWorkflows, terminateWorkflows } from '../../clients/workflowErasure.js';
import type { Erasure } from '../../contracts/http/erasure.js';
import { completeErasure, type ErasureRequest, eraseRows, erasureScope } from '../../infra/db/erasure.js';
import type { Database, ErasuresTable } from '../../infra/db/schema.js';

async function temporal<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (isTemporalOutage(error))
      throw new TemporalUnavailableError('Temporal is unavailable (erasure)', 2, { cause: error });
    throw error;
  }
}

export function erasureOf(row: Selectable<ErasuresTable>): Erasure {
  return {
    erasureId: Number(row.id),
    scope: row.scope,
    tenantId: row.tenant_id,
    conversationId: row.conversation_id,
    requestedBy: row.requested_by,
    reason: row.reason,
    status: row.status,
    rowsDeleted: row.rows_deleted,
    workflowsDeleted: row.workflows_deleted,
    requestedAt: row.requested_at.toISOString(),
    completedAt: row.completed_at ? row.completed_at.toISOString() : null,
  };
}

export interface ErasureDeps {
  db: Kysely<Database>;
  client: Client;
  /** Aborted when the gateway closes: a deletion still being confirmed stops (erasing again finishes it). */
  signal: AbortSignal;
  /** Called with a failure of the deletions confirmed after the answer. */
  onBackgroundError: (error: unknown) => void;
}

/** Rounds of delete-then-check while the request waits (about 10 s), then in the background (about 10 min). */
const ANSWER_ROUNDS = 20;
const BACKGROUND_ROUNDS = 1_200;

export async function erase(deps: ErasureDeps, request: ErasureRequest): Promise<Erasure> {
  const { db, client } = deps;
  const scope = await erasureScope(db, request);
  const target = {
    ...request,
    compactions: scope.compactions,
    conversationIds: scope.conversationIds,
    webhookIds: scope.webhookIds,
  };
  const before = await temporal(() => findWorkflows(client, target));
  await temporal(() => terminateWorkflows(client, before));
  const erased = await eraseRows(db, request);
  const after = await temporal(() => findWorkflows(client, target));
  await temporal(() => terminateWorkflows(client, after));
  const executions = new Map([...before, ...after].map((e) => [`${e.workflowId}\n${e.runId ?? ''}`, e]));
  const first = await temporal(() =>
    deleteWorkflows(client, [...executions.values()], { rounds: ANSWER_ROUNDS, signal: deps.signal }),
  );
  if (first.remaining.length === 0) return erasureOf(await completeErasure(db, erased.erasureId, first.deleted));
  // The rows are gone and audited (`rows_deleted`); Temporal's histories are confirmed in the background, and the
  // audit row becomes `completed` when they are (erasing again also finishes it).
  void deleteWorkflows(client, first.remaining, { rounds: BACKGROUND_ROUNDS, signal: deps.signal })
    .then(async (rest) => {
      if (rest.remaining.length === 0) await completeErasure(db, erased.erasureId, first.deleted + rest.deleted);
    })
    .catch(deps.onBackgroundError);
  const row = await db.selectFrom('erasures').selectAll().where('id', '=', erased.erasureId).executeTakeFirstOrThrow();
  return erasureOf(row);
}
