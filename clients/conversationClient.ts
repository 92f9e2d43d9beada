// The Temporal side of a conversation (used by clients/conversations.ts): start the workflow, notify it of a stored
// batch (signal-with-start, so a missing workflow is started again from the conversation record), and run the
// updates that need the workflow — chat turns, manual compaction, model switch — each accepted within a bounded
// time or refused as unavailable (issue #9 §6: a dead worker gives 503, never a hang).
import {
  Client,
  type Connection,
  isGrpcServiceError,
  ServiceError,
  type WorkflowUpdateHandle,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import type { ReplayResult } from '../contracts/compactionActivities.js';
import type {
  ChatTurnRequest,
  ClientCompaction,
  CompactionResult,
  CompactRequest,
  ConversationInput,
  ConversationStatus,
  SwitchModelRequest,
  TurnOutcome,
} from '../contracts/conversation.js';
import type { StoredBatch } from '../contracts/conversationLog.js';
import type { conversationWorkflow } from '../workflows/conversation/workflow.js';
import {
  batchStoredSignal,
  chatTurnUpdate,
  clientCompactedSignal,
  compactUpdate,
  statusQuery,
  switchModelUpdate,
} from '../workflows/definitions.js';
import {
  CONVERSATIONS_TASK_QUEUE,
  conversationWorkflowId,
  replayWorkflowId,
  webhookWorkflowId,
} from '../workflows/ids.js';
import type { replayCompactionWorkflow } from '../workflows/replay.js';
import { ConversationId, Model, TenantId } from '../workflows/searchAttributes.js';
import type { webhookDeliveryWorkflow } from '../workflows/webhookDelivery.js';

/** Temporal cannot be reached, or the conversation's worker did not take the request in time: retry later (503). */
export class TemporalUnavailableError extends Error {
  override readonly name = 'TemporalUnavailableError';
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;

/** A connection-level failure of a Temporal call (server down or unreachable, deadline passed). */
export function isTemporalOutage(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; depth++) {
    if (e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
    if (isGrpcServiceError(e) && (e.code === GRPC_UNAVAILABLE || e.code === GRPC_DEADLINE_EXCEEDED)) return true;
    if (e instanceof ServiceError && /UNAVAILABLE|DEADLINE_EXCEEDED|connect/i.test(e.message)) return true;
    e = e.cause;
  }
  return false;
}

/**
 * The conversation workflow's task timeout (kept across continue-as-new). Its state publication and the agent turn
 * run as local activities inside a workflow task: a worker killed there loses the task to another worker after this
 * long (Temporal's default of 10 s put that kill point at the limit of issue #9's ≤ 10 s recovery goal), and a long
 * model call keeps the task alive with a heartbeat at 80 % of it, when other updates waiting for the conversation
 * are accepted. Not lower: under overload a task may wait seconds for a workflow thread, and a timed-out task is
 * retried, adding load.
 */
export const CONVERSATION_TASK_TIMEOUT = '8 seconds';

export interface ClientOptions {
  namespace?: string;
  taskQueue?: string;
  /** How long an update may wait for the workflow's worker to accept it (default 10 s). */
  acceptWithinMs?: number;
  /** Deadline of a start or a notification: past it Temporal counts as unreachable (default 5 s). */
  callTimeoutMs?: number;
}

export class ConversationClient {
  readonly client: Client;
  readonly taskQueue: string;
  readonly acceptWithinMs: number;
  readonly callTimeoutMs: number;

  constructor(connection: Connection, options: ClientOptions = {}) {
    this.client = new Client({ connection, namespace: options.namespace ?? 'default' });
    this.taskQueue = options.taskQueue ?? CONVERSATIONS_TASK_QUEUE;
    this.acceptWithinMs = options.acceptWithinMs ?? 10_000;
    this.callTimeoutMs = options.callTimeoutMs ?? 5_000;
  }

  private handle(tenantId: string, conversationId: string) {
    return this.client.workflow.getHandle<typeof conversationWorkflow>(
      conversationWorkflowId(tenantId, conversationId),
    );
  }

  private startOptions(input: ConversationInput) {
    return {
      taskQueue: this.taskQueue,
      workflowTaskTimeout: CONVERSATION_TASK_TIMEOUT,
      workflowId: conversationWorkflowId(input.tenantId, input.conversationId),
      args: [input] as [ConversationInput],
      staticSummary: `Conversation ${input.conversationId} of tenant ${input.tenantId}`,
      typedSearchAttributes: [
        { key: TenantId, value: input.tenantId },
        { key: ConversationId, value: input.conversationId },
        { key: Model, value: input.model },
      ],
    };
  }

  /** Runs a Temporal call; a connection failure becomes TemporalUnavailableError. */
  private async guarded<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isTemporalOutage(err)) {
        throw new TemporalUnavailableError(`Temporal is unavailable (${what})`, 2, { cause: err });
      }
      throw err;
    }
  }

  /** Starts the conversation workflow unless it already runs (idempotent). */
  async start(input: ConversationInput): Promise<void> {
    await this.guarded('start', () =>
      this.client.withDeadline(Date.now() + this.callTimeoutMs, () =>
        this.client.workflow.start('conversationWorkflow', {
          ...this.startOptions(input),
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      ),
    );
  }

  /** Tells the workflow about a committed batch, starting it again from `input` if it is not running. */
  async notify(input: ConversationInput, batch: StoredBatch): Promise<void> {
    await this.signalStarting(
      input,
      batchStoredSignal,
      batch,
      'the messages are stored; retry with the same idempotency keys to notify the conversation',
    );
  }

  /** Tells the workflow that a drop-in client's own compaction was committed (a new session, content-free). */
  async clientCompacted(input: ConversationInput, compaction: ClientCompaction): Promise<void> {
    await this.signalStarting(
      input,
      clientCompactedSignal,
      compaction,
      'the client compaction is stored; retry the request to notify the conversation',
    );
  }

  /** Signals the workflow, starting it from `input` if it is not running; `unavailable` says what to do on an outage. */
  private async signalStarting<A>(
    input: ConversationInput,
    signal: SignalDefinition<[A]>,
    arg: A,
    unavailable: string,
  ): Promise<void> {
    await this.guarded(unavailable, () =>
      this.client.withDeadline(Date.now() + this.callTimeoutMs, () =>
        this.client.workflow.signalWithStart('conversationWorkflow', {
          ...this.startOptions(input),
          signal,
          signalArgs: [arg],
        }),
      ),
    );
  }

  /**
   * An update that needs the workflow: accepted within `acceptWithinMs` (else TemporalUnavailableError: the worker
   * is down or busy), then awaited to completion. The same `updateId` attaches to the update already running.
   */
  private async update<Ret>(
    tenantId: string,
    conversationId: string,
    start: (handle: ReturnType<ConversationClient['handle']>) => Promise<WorkflowUpdateHandle<Ret>>,
  ): Promise<Ret> {
    const handle = this.handle(tenantId, conversationId);
    const started = await this.guarded('the conversation worker did not accept the request in time', () =>
      this.client.withDeadline(Date.now() + this.acceptWithinMs, () => start(handle)),
    );
    return this.guarded('update result', () => started.result());
  }

  /** Chat backend mode: runs the agent turn of the stored batch; idempotent by turn id. */
  chatTurn(tenantId: string, conversationId: string, request: ChatTurnRequest): Promise<TurnOutcome> {
    return this.update(tenantId, conversationId, (h) =>
      h.startUpdate(chatTurnUpdate, { args: [request], updateId: request.turnId, waitForStage: 'ACCEPTED' }),
    );
  }

  /** Manual compress (SPEC §7.6): forced, with an optional focus topic; returns the compaction result. */
  compact(tenantId: string, conversationId: string, request: CompactRequest = {}): Promise<CompactionResult> {
    return this.update(tenantId, conversationId, (h) =>
      h.startUpdate(compactUpdate, { args: [request], waitForStage: 'ACCEPTED' }),
    );
  }

  switchModel(tenantId: string, conversationId: string, request: SwitchModelRequest): Promise<ConversationStatus> {
    return this.update(tenantId, conversationId, (h) =>
      h.startUpdate(switchModelUpdate, { args: [request], waitForStage: 'ACCEPTED' }),
    );
  }

  /** The workflow's live status (a query: nothing is written to its history), within `timeoutMs`. */
  liveStatus(tenantId: string, conversationId: string, timeoutMs = 2_000): Promise<ConversationStatus> {
    return this.guarded('status query', () =>
      this.client.withDeadline(Date.now() + timeoutMs, () => this.handle(tenantId, conversationId).query(statusQuery)),
    );
  }

  /** Replays a compaction that used the fallback summary (SPEC §13.7) and waits for the result. */
  /** Starts a webhook endpoint's delivery workflow (issue #14 §2); idempotent. */
  async startWebhookDelivery(tenantId: string, webhookId: string): Promise<void> {
    await this.guarded('webhook', () =>
      this.client.workflow.start<typeof webhookDeliveryWorkflow>('webhookDeliveryWorkflow', {
        taskQueue: this.taskQueue,
        workflowId: webhookWorkflowId(tenantId, webhookId),
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ tenantId, webhookId }],
        staticSummary: `Webhook ${webhookId} of tenant ${tenantId}: deliveries`,
        typedSearchAttributes: [{ key: TenantId, value: tenantId }],
      }),
    );
  }

  async replayCompaction(tenantId: string, compactionId: string): Promise<ReplayResult> {
    const attempt = Date.now();
    return this.guarded('replay', () =>
      this.client.workflow.execute<typeof replayCompactionWorkflow>('replayCompactionWorkflow', {
        taskQueue: this.taskQueue,
        workflowId: replayWorkflowId(tenantId, compactionId, attempt),
        args: [{ tenantId, compactionId }],
        staticSummary: `Replay of compaction ${compactionId} (tenant ${tenantId})`,
        typedSearchAttributes: [{ key: TenantId, value: tenantId }],
      }),
    );
  }
}
