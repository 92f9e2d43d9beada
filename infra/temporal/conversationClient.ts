// Client functions for conversations (used by the gateway, the CLI and the tests): submit messages
// (signal-with-start, idempotency keys), manual compress, model switch, status, sync, compaction replay.

import { Client, type Connection, WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { resolveUsableContextLength } from '../../engine/index.js';
import type { ConversationInput, conversationWorkflow } from '../../workflows/conversation.js';
import {
  type ChatTurnRequest,
  type CompactionResult,
  type CompactRequest,
  type ConversationStatus,
  chatTurnUpdate,
  compactUpdate,
  type SubmitMessages,
  type SwitchModelRequest,
  statusQuery,
  submitMessagesSignal,
  switchModelUpdate,
  syncUpdate,
  type TurnResult,
} from '../../workflows/definitions.js';
import { CONVERSATIONS_TASK_QUEUE, conversationWorkflowId, replayWorkflowId } from '../../workflows/ids.js';
import type { ReplayResult, replayCompactionWorkflow } from '../../workflows/replay.js';
import { ConversationId, Model, TenantId } from '../../workflows/searchAttributes.js';
import { validateSubmit } from '../../workflows/validation.js';

/** A request the client refuses before anything is sent (HTTP 400 material); the message names the field. */
export class InvalidRequestError extends Error {
  override name = 'InvalidRequestError';
}

export interface ConversationStart {
  model: string;
  provider?: string | null;
  contextLength?: number | null;
  source?: string;
  title?: string | null;
  timeouts?: ConversationInput['timeouts'];
  maxSeenKeys?: number;
}

/** SPEC §4.1, §4.3, §4.4: refuse an unknown -900k id or a window below 64,000 before anything starts. */
export function validateModelChoice(start: Pick<ConversationStart, 'model' | 'provider' | 'contextLength'>): void {
  try {
    resolveUsableContextLength(start.model, start.provider ?? null, start.contextLength ?? null);
  } catch (err) {
    throw new InvalidRequestError((err as Error).message);
  }
}

export class ConversationClient {
  readonly client: Client;
  readonly taskQueue: string;

  constructor(connection: Connection, options: { namespace?: string; taskQueue?: string } = {}) {
    this.client = new Client({ connection, namespace: options.namespace ?? 'default' });
    this.taskQueue = options.taskQueue ?? CONVERSATIONS_TASK_QUEUE;
  }

  private handle(tenantId: string, conversationId: string) {
    return this.client.workflow.getHandle<typeof conversationWorkflow>(
      conversationWorkflowId(tenantId, conversationId),
    );
  }

  private startOptions(tenantId: string, conversationId: string, start: ConversationStart) {
    validateModelChoice(start);
    const input: ConversationInput = {
      tenantId,
      conversationId,
      model: start.model,
      provider: start.provider ?? null,
      contextLength: start.contextLength ?? null,
      source: start.source ?? 'api',
      title: start.title ?? null,
      ...(start.timeouts ? { timeouts: start.timeouts } : {}),
      ...(start.maxSeenKeys ? { maxSeenKeys: start.maxSeenKeys } : {}),
    };
    return {
      taskQueue: this.taskQueue,
      workflowId: conversationWorkflowId(tenantId, conversationId),
      args: [input] as [ConversationInput],
      staticSummary: `Conversation ${conversationId} of tenant ${tenantId}`,
      typedSearchAttributes: [
        { key: TenantId, value: tenantId },
        { key: ConversationId, value: conversationId },
        { key: Model, value: start.model },
      ],
    };
  }

  /** Starts the conversation workflow unless it already runs (idempotent). */
  async start(tenantId: string, conversationId: string, start: ConversationStart): Promise<void> {
    await this.client.workflow.start('conversationWorkflow', {
      ...this.startOptions(tenantId, conversationId, start),
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  }

  /** Whether the conversation's workflow is running (closed or never started: false). */
  async isRunning(tenantId: string, conversationId: string): Promise<boolean> {
    try {
      const description = await this.handle(tenantId, conversationId).describe();
      return description.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  /** Appends messages to a running conversation (no start). Duplicated idempotency keys are ignored. */
  async append(tenantId: string, conversationId: string, batch: SubmitMessages): Promise<void> {
    const problem = validateSubmit(batch);
    if (problem) throw new InvalidRequestError(problem);
    await this.handle(tenantId, conversationId).signal(submitMessagesSignal, batch);
  }

  /** Appends messages (starting the conversation workflow when needed). Duplicated idempotency keys are ignored. */
  async submit(
    tenantId: string,
    conversationId: string,
    batch: SubmitMessages,
    start: ConversationStart,
  ): Promise<void> {
    const problem = validateSubmit(batch);
    if (problem) throw new InvalidRequestError(problem);
    await this.client.workflow.signalWithStart('conversationWorkflow', {
      ...this.startOptions(tenantId, conversationId, start),
      signal: submitMessagesSignal,
      signalArgs: [batch],
    });
  }

  /**
   * Chat backend mode: appends the messages (a user message, or the results of the tool calls the last reply asked
   * for), runs the main model and returns its reply with the usage. A failed model call rejects with its cause.
   */
  async chatTurn(tenantId: string, conversationId: string, request: ChatTurnRequest): Promise<TurnResult> {
    const problem = validateSubmit({ messages: request.messages });
    if (problem) throw new InvalidRequestError(problem);
    return this.handle(tenantId, conversationId).executeUpdate(chatTurnUpdate, { args: [request] });
  }

  /** Waits until every message submitted before this call has been processed; returns the status then. */
  async sync(tenantId: string, conversationId: string): Promise<ConversationStatus> {
    return this.handle(tenantId, conversationId).executeUpdate(syncUpdate);
  }

  /** Manual compress (SPEC §7.6): forced, with an optional focus topic; returns the compaction result. */
  async compact(tenantId: string, conversationId: string, request: CompactRequest = {}): Promise<CompactionResult> {
    return this.handle(tenantId, conversationId).executeUpdate(compactUpdate, { args: [request] });
  }

  /** Starts the conversation if needed, then compacts it (update-with-start). */
  async compactWithStart(
    tenantId: string,
    conversationId: string,
    request: CompactRequest,
    start: ConversationStart,
  ): Promise<CompactionResult> {
    const op = new WithStartWorkflowOperation<typeof conversationWorkflow>('conversationWorkflow', {
      ...this.startOptions(tenantId, conversationId, start),
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    return this.client.workflow.executeUpdateWithStart(compactUpdate, { args: [request], startWorkflowOperation: op });
  }

  async switchModel(
    tenantId: string,
    conversationId: string,
    request: SwitchModelRequest,
  ): Promise<ConversationStatus> {
    return this.handle(tenantId, conversationId).executeUpdate(switchModelUpdate, { args: [request] });
  }

  async status(tenantId: string, conversationId: string): Promise<ConversationStatus> {
    return this.handle(tenantId, conversationId).query(statusQuery);
  }

  /** Replays a failed / fallback / aborted compaction (SPEC §13.7) and waits for the result. */
  async replayCompaction(tenantId: string, compactionId: string): Promise<ReplayResult> {
    const attempt = Date.now();
    return this.client.workflow.execute<typeof replayCompactionWorkflow>('replayCompactionWorkflow', {
      taskQueue: this.taskQueue,
      workflowId: replayWorkflowId(tenantId, compactionId, attempt),
      args: [{ tenantId, compactionId }],
      staticSummary: `Replay of compaction ${compactionId} (tenant ${tenantId})`,
      typedSearchAttributes: [{ key: TenantId, value: tenantId }],
    });
  }
}
