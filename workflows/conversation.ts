// The conversation entity workflow (DESIGN.md §3): one per conversation, ID `conv:<tenant>:<conversation>`.
// Handlers only validate and enqueue; one main loop drains the queue in order (ConversationEntity does the work).
// The engine's state lives here as plain JSON and travels through continue-as-new; transcripts stay in PostgreSQL.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  Trigger,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ConversationActivities } from '../activities/conversation.js';
import { normalizeCompressorState } from '../engine/index.js';
import { type CompactionTimeouts, DEFAULT_COMPACTION_TIMEOUTS } from './compaction.js';
import { ConversationEntity } from './conversationEntity.js';
import { resolveWindow } from './conversationRules.js';
import {
  type CarriedState,
  type ConversationInput,
  EMPTY_CACHE_TELEMETRY,
  startingStatus,
} from './conversationState.js';
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
  summaryReplacedSignal,
  switchModelUpdate,
  syncUpdate,
  type TurnResult,
} from './definitions.js';
import { newSessionId } from './ids.js';
import { validateSubmit } from './validation.js';

export type { CarriedState, ConversationInput } from './conversationState.js';

type QueueItem =
  | { kind: 'submit'; batch: SubmitMessages }
  | { kind: 'chat'; request: ChatTurnRequest; done: Trigger<TurnResult> }
  | { kind: 'compact'; request: CompactRequest; done: Trigger<CompactionResult> }
  | { kind: 'switchModel'; request: SwitchModelRequest; done: Trigger<ConversationStatus> }
  | { kind: 'sync'; done: Trigger<ConversationStatus> };

const store = proxyActivities<ConversationActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

export async function conversationWorkflow(input: ConversationInput): Promise<void> {
  const timeouts: CompactionTimeouts = { ...DEFAULT_COMPACTION_TIMEOUTS, ...input.timeouts };
  const queue: QueueItem[] = [];
  const earlyNotices: string[] = [];
  let entity: ConversationEntity | undefined;
  const notice = (text: string) => (entity ? entity.notice(text) : earlyNotices.push(text));
  const enqueue = async <T>(make: (done: Trigger<T>) => QueueItem): Promise<T> => {
    const done = new Trigger<T>();
    queue.push(make(done));
    return await done;
  };

  // Handlers are registered before the first await, so messages and updates sent with the start are accepted.
  setHandler(submitMessagesSignal, (batch) => {
    // Invalid batches are refused by the client before they are sent; a malformed one reaching the workflow is
    // reported in the notices rather than silently dropped.
    const problem = validateSubmit(batch);
    if (problem) notice(`Rejected a message batch: ${problem}`);
    else queue.push({ kind: 'submit', batch });
  });
  setHandler(summaryReplacedSignal, ({ compactionId, summaryBody }) =>
    entity?.summaryReplaced(compactionId, summaryBody),
  );
  setHandler(chatTurnUpdate, (request) => enqueue<TurnResult>((done) => ({ kind: 'chat', request, done })), {
    validator: (request) => {
      const problem = validateSubmit({ messages: request?.messages });
      if (problem) throw new Error(problem);
    },
  });
  setHandler(compactUpdate, (request) => enqueue<CompactionResult>((done) => ({ kind: 'compact', request, done })), {
    validator: (request) => {
      if (request?.focusTopic !== undefined && typeof request.focusTopic !== 'string') {
        throw new Error('focusTopic must be a string');
      }
    },
  });
  setHandler(
    switchModelUpdate,
    (request) => enqueue<ConversationStatus>((done) => ({ kind: 'switchModel', request, done })),
    {
      validator: (request) => {
        if (!request || typeof request.model !== 'string' || request.model.trim() === '') {
          throw new Error('model must be a non-empty string');
        }
        const current = entity ? entity.state.provider : (input.provider ?? null);
        resolveWindow(
          request.model,
          request.provider === undefined ? current : request.provider,
          request.contextLength ?? null,
        );
      },
    },
  );
  setHandler(syncUpdate, () => enqueue<ConversationStatus>((done) => ({ kind: 'sync', done })));
  setHandler(statusQuery, () => (entity ? entity.status() : startingStatus(input, queue.length, earlyNotices)));

  const fresh = !input.carried;
  const state = input.carried ?? (await openState(input));
  entity = new ConversationEntity(
    { tenantId: input.tenantId, conversationId: input.conversationId, source: input.source ?? 'api' },
    state,
    { timeouts, maxSeenKeys: input.maxSeenKeys ?? 5_000, pendingItems: () => queue.length },
  );
  for (const text of earlyNotices.splice(0)) entity.notice(text);
  if (fresh) await entity.autoraiseNotice();
  entity.publish();

  for (;;) {
    await condition(() => queue.length > 0 || workflowInfo().continueAsNewSuggested);
    const item = queue.shift();
    if (!item) {
      // Continue-as-new is suggested and the queue is drained: let running handlers finish, then re-check (a
      // signal may have arrived meanwhile; it is processed before the hand-over, never lost).
      await condition(allHandlersFinished);
      if (queue.length > 0) continue;
      break;
    }
    await run(entity, item);
  }
  const carried = entity.carry();
  carried.runs += 1;
  await continueAsNew<typeof conversationWorkflow>({ ...input, carried });
}

async function run(entity: ConversationEntity, item: QueueItem): Promise<void> {
  switch (item.kind) {
    case 'submit':
      await entity.submit(item.batch);
      return;
    case 'chat':
      // A failed model call (after its retries) fails this update only; the conversation goes on.
      try {
        item.done.resolve(await entity.chatTurn(item.request));
      } catch (err) {
        item.done.reject(err);
      }
      return;
    case 'compact':
      item.done.resolve(await entity.compact('manual', { force: true, focusTopic: item.request.focusTopic ?? null }));
      return;
    case 'switchModel':
      item.done.resolve(await entity.switchModel(item.request));
      return;
    case 'sync':
      item.done.resolve(entity.status());
      return;
  }
}

async function openState(input: ConversationInput): Promise<CarriedState> {
  const model = input.model;
  const provider = input.provider ?? null;
  const contextLength = resolveWindow(model, provider, input.contextLength ?? null);
  const opened = await store.openConversation({
    tenantId: input.tenantId,
    conversationId: input.conversationId,
    proposedSessionId: newSessionId(Date.now(), uuid4().replace(/-/g, '')),
    model,
    provider,
    source: input.source ?? 'api',
    title: input.title ?? null,
  });
  return {
    sessionId: opened.sessionId,
    config: opened.config,
    policyVersion: opened.policyVersion,
    cacheTtl: opened.cacheTtl,
    compressor: normalizeCompressorState({ previousSummary: opened.previousSummary }),
    seenKeys: [],
    compactionSeq: 0,
    turnSeq: 0,
    activeMessages: opened.activeMessages,
    activeTokens: opened.activeTokens,
    tokensSinceReading: 0,
    hygieneCooldownUntil: null,
    contextLength,
    model,
    provider,
    processedBatches: 0,
    lastCompaction: null,
    notices: [],
    lastCommittedCompactionId: null,
    cache: { ...EMPTY_CACHE_TELEMETRY },
    runs: 0,
  };
}
