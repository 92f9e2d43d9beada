// What Temporal holds of an erased conversation or tenant (issue #14 §6 data lifecycle; ids: DESIGN.md §3): the
// conversation workflows `conv:<tenant>:<conversation>`, their compaction children `compact:<tenant>:<session>:<n>`,
// the replay workflows `replay:<tenant>:<compaction>:<n>` and a tenant's webhook workflows `webhook:<tenant>:<id>`.
// They are found through the visibility API by the search attributes `TenantId` / `ConversationId` (replays carry
// only `TenantId`: they are matched by their id's prefix) and by the ids PostgreSQL names (visibility is eventually
// consistent: a workflow started a moment ago may not be listed yet). Running ones are terminated; every run's
// history is deleted with the workflow service's DeleteWorkflowExecution, so the Temporal UI shows nothing of them
// (its list catches up asynchronously).
import { type Client, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { compactionWorkflowId, conversationWorkflowId, webhookWorkflowId } from '../workflows/ids.js';
import { ConversationId, TenantId } from '../workflows/searchAttributes.js';

export interface WorkflowErasureTarget {
  tenantId: string;
  conversationId?: string;
  /** The target's compactions (PostgreSQL), whose child and replay workflow ids are built from them. */
  compactions: ReadonlyArray<{ id: string; sessionId: string; seq: number }>;
  /**
   * A whole tenant's conversations and webhook endpoints (PostgreSQL): their workflows are named, not only listed,
   * so one started a moment ago (a webhook created just before) is found although visibility does not list it yet.
   */
  conversationIds?: readonly string[];
  webhookIds?: readonly string[];
}

interface Execution {
  workflowId: string;
  runId?: string;
  running: boolean;
}

const GRPC_NOT_FOUND = 5;
const ERASED = 'erased (issue #14 §6 data lifecycle)';

/** A visibility query value: a double-quoted string (ids match the tenant and conversation id patterns anyway). */
const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;

function isNotFound(error: unknown): boolean {
  return error instanceof WorkflowNotFoundError || (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND);
}

async function listed(client: Client, query: string, keep: (workflowId: string) => boolean): Promise<Execution[]> {
  const out: Execution[] = [];
  for await (const info of client.workflow.list({ query })) {
    if (keep(info.workflowId))
      out.push({ workflowId: info.workflowId, runId: info.runId, running: info.status.name === 'RUNNING' });
  }
  return out;
}

/** Every execution of the target that visibility lists, plus the latest run of each id PostgreSQL names. */
export async function findWorkflows(client: Client, target: WorkflowErasureTarget): Promise<Execution[]> {
  const tenant = `${TenantId.name} = ${quoted(target.tenantId)}`;
  const found: Execution[] = [];
  const named: string[] = [];
  if (target.conversationId === undefined) {
    found.push(...(await listed(client, tenant, () => true)));
    for (const id of target.conversationIds ?? []) named.push(conversationWorkflowId(target.tenantId, id));
    for (const id of target.webhookIds ?? []) named.push(webhookWorkflowId(target.tenantId, id));
  } else {
    found.push(
      ...(await listed(client, `${tenant} AND ${ConversationId.name} = ${quoted(target.conversationId)}`, () => true)),
    );
    const replays = target.compactions.map((c) => `replay:${target.tenantId}:${c.id}:`);
    if (replays.length > 0) {
      const query = `${tenant} AND WorkflowType = "replayCompactionWorkflow"`;
      found.push(...(await listed(client, query, (id) => replays.some((prefix) => id.startsWith(prefix)))));
    }
    named.push(conversationWorkflowId(target.tenantId, target.conversationId));
  }
  for (const c of target.compactions) named.push(compactionWorkflowId(target.tenantId, c.sessionId, c.seq));
  const seen = new Set(found.map((e) => e.workflowId));
  for (const workflowId of named) {
    if (seen.has(workflowId)) continue;
    try {
      const described = await client.workflow.getHandle(workflowId).describe();
      found.push({ workflowId, runId: described.runId, running: described.status.name === 'RUNNING' });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return found;
}

/** Terminates the running executions (nothing of the target runs while its rows are deleted); how many. */
export async function terminateWorkflows(client: Client, executions: readonly Execution[]): Promise<number> {
  let terminated = 0;
  for (const e of executions) {
    if (!e.running) continue;
    try {
      await client.workflow.getHandle(e.workflowId, e.runId).terminate(ERASED);
      terminated++;
    } catch (error) {
      if (!isNotFound(error)) throw error; // closed meanwhile: its history is deleted all the same
    }
  }
  return terminated;
}

/** Whether the execution's history still exists (a deleted one is not found). */
async function exists(client: Client, e: Execution): Promise<boolean> {
  try {
    await client.workflow.getHandle(e.workflowId, e.runId).describe();
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

export interface DeleteOptions {
  /** Rounds of delete-then-check (default 40). */
  rounds?: number;
  /** Pause before each check (default 500 ms). */
  pauseMs?: number;
  /** Stops between rounds (the process is shutting down): what is left is answered as remaining. */
  signal?: AbortSignal;
}

/**
 * Deletes each execution's history and checks that it is gone, asking again every ~10 s while it is not: the server
 * accepts the delete at once but carries it out asynchronously, which took 10–35 s on the shared dev server in our
 * tests. Answers how many are gone and which are still there after the last round.
 */
export async function deleteWorkflows(
  client: Client,
  executions: readonly Execution[],
  options: DeleteOptions = {},
): Promise<{ deleted: number; remaining: Execution[] }> {
  const rounds = options.rounds ?? 40;
  const pauseMs = options.pauseMs ?? 500;
  const askEvery = Math.max(1, Math.round(10_000 / pauseMs));
  let pending = [...executions];
  for (let round = 0; round < rounds && pending.length > 0 && !options.signal?.aborted; round++) {
    // Asked once, then again every `askEvery` rounds only: a request is kept by the server (our measurements: gone
    // 10–35 s later on the shared dev server, whether asked right after the termination or once it was visible).
    if (round % askEvery === 0) await requestDeletion(client, pending);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    if (options.signal?.aborted) break;
    const still: Execution[] = [];
    for (const e of pending) if (await exists(client, e)) still.push(e);
    pending = still;
  }
  return { deleted: executions.length - pending.length, remaining: pending };
}

async function requestDeletion(client: Client, executions: readonly Execution[]): Promise<void> {
  for (const e of executions) {
    try {
      await client.workflowService.deleteWorkflowExecution({
        namespace: client.options.namespace,
        workflowExecution: { workflowId: e.workflowId, ...(e.runId ? { runId: e.runId } : {}) },
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}
