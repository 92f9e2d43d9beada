// The conversation entity workflow (DESIGN.md §3): one per conversation, ID `conv:<tenant>:<conversation>`.
// Handlers only validate and enqueue; one main loop works the queue in order (ConversationEntity does the work).
// Messages are committed to PostgreSQL before the workflow hears of them (content-free StoredBatch notifications),
// so the workflow holds decisions and ids only; its state travels through continue-as-new, transcripts never do.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  Trigger,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ConversationActivities } from '../../activities/conversation.js';
import type { CompactionTimeouts } from '../../contracts/compaction.js';
import type {
  ChatTurnRequest,
  ClientCompaction,
  CompactionResult,
  CompactRequest,
  ConversationStatus,
  SwitchModelRequest,
  TurnOutcome,
} from '../../contracts/conversation.js';
import type { NotificationFold, StoredBatch } from '../../contracts/conversationLog.js';
import { validateClientCompaction, validateNotificationFold, validateStoredBatch } from '../../contracts/validation.js';
import { DEFAULT_HOST_POLICY, normalizeHostPolicy } from '../../engine/index.js';
import { storeActivityOptions } from '../activityOptions.js';
import { DEFAULT_COMPACTION_TIMEOUTS } from '../compaction.js';
import {
  batchStoredSignal,
  chatTurnUpdate,
  clientCompactedSignal,
  compactUpdate,
  statusQuery,
  summaryReplacedSignal,
  switchModelUpdate,
} from '../definitions.js';
import { newSessionId } from '../ids.js';
import { runChatTurn } from './chatTurn.js';
import { adoptClientCompaction } from './clientCompaction.js';
import { ConversationEntity } from './entity.js';
import { autoraiseNotice, switchModel } from './modelSwitch.js';
import { type CarriedState, type ConversationInput, openingState, skipGaps, startingStatus } from './state.js';
import { resolveWindow } from './window.js';

export type { CarriedState, ConversationInput } from './state.js';

type QueueItem =
  | { kind: 'batch'; batch: StoredBatch }
  | { kind: 'clientCompaction'; compaction: ClientCompaction }
  | { kind: 'chat'; request: ChatTurnRequest; done: Trigger<TurnOutcome> }
  | { kind: 'compact'; request: CompactRequest; done: Trigger<CompactionResult> }
  | { kind: 'switchModel'; request: SwitchModelRequest; done: Trigger<ConversationStatus> };

const store = proxyActivities<ConversationActivities>(storeActivityOptions);

/** Patch id of batch coalescing (issue #11 §2): histories recorded before it publish after every batch. */
const COALESCE_PATCH = 'coalesce-batches';

/** A notification that never came (its gateway died between commit and signal) is waited for this long. */
const DEFAULT_GAP_WAIT_MS = 2_000;

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
  setHandler(batchStoredSignal, (batch) => {
    // The gateway builds notifications from its own commits; a malformed one is reported, never silently dropped.
    const problem = validateStoredBatch(batch);
    if (problem) notice(`Ignored a malformed batch notification: ${problem}`);
    else queue.push({ kind: 'batch', batch });
  });
  setHandler(clientCompactedSignal, (compaction) => {
    const problem = validateClientCompaction(compaction);
    if (problem) notice(`Ignored a malformed client compaction notification: ${problem}`);
    else queue.push({ kind: 'clientCompaction', compaction });
  });
  // Sent by replays recorded before the claim check; the next compaction reads the replayed summary from the log.
  setHandler(summaryReplacedSignal, () => undefined);
  setHandler(chatTurnUpdate, (request) => enqueue<TurnOutcome>((done) => ({ kind: 'chat', request, done })), {
    validator: (request) => {
      if (typeof request?.turnId !== 'string' || request.turnId === '') throw new Error('turnId is required');
      const problem = validateStoredBatch(request.batch);
      if (problem) throw new Error(problem);
    },
  });
  setHandler(compactUpdate, (request) => enqueue<CompactionResult>((done) => ({ kind: 'compact', request, done })), {
    validator: (request) => {
      if (request?.focusTopic !== undefined && typeof request.focusTopic !== 'string') {
        throw new Error('focusTopic must be a string');
      }
      const problem =
        request?.notification === undefined ? null : validateNotificationFold(request.notification, 'notification');
      if (problem) throw new Error(problem);
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
        const problem =
          request.notification === undefined ? null : validateNotificationFold(request.notification, 'notification');
        if (problem) throw new Error(problem);
        const current = entity ? entity.state.provider : (input.provider ?? null);
        resolveWindow(
          request.model,
          request.provider === undefined ? current : request.provider,
          request.contextLength ?? null,
        );
      },
    },
  );
  setHandler(statusQuery, () => (entity ? entity.status() : startingStatus(input, queue.length, earlyNotices)));

  const fresh = !input.carried;
  const opened = input.carried ? null : await openState(input);
  const state = input.carried ?? (opened as OpenedState).state;
  entity = new ConversationEntity(
    { tenantId: input.tenantId, conversationId: input.conversationId, source: input.source ?? 'api' },
    state,
    { timeouts, pendingItems: () => queue.length },
  );
  // Quiet batches committed before the workflow opened (the gateway applied them with the starting rules).
  if (opened?.notification) await entity.applyNotification(opened.notification);
  for (const text of earlyNotices.splice(0)) entity.notice(text);
  if (fresh) await autoraiseNotice(entity);
  await entity.publish();

  const gapWaitMs = input.gapWaitMs ?? DEFAULT_GAP_WAIT_MS;
  const live = entity;
  for (;;) {
    await condition(
      () =>
        queue.length > 0 ||
        live.background.finished ||
        (workflowInfo().continueAsNewSuggested && !live.background.active),
    );
    if (entity.background.finished) {
      // A background compaction finished (SPEC §19 `background`): its outcome is applied before the next item.
      await entity.background.settle();
      await entity.publish();
      continue;
    }
    const item = queue.shift();
    if (!item) {
      // Continue-as-new is suggested and the queue is drained: let running handlers finish, then re-check (a
      // signal may have arrived meanwhile; it is processed before the hand-over, never lost).
      await condition(allHandlersFinished);
      if (queue.length > 0 || entity.background.active) continue;
      break;
    }
    if (item.kind === 'batch' && patched(COALESCE_PATCH)) {
      // Every pending notification in one step (coalescing under load): each is decided on in order, the state is
      // published once (one activity instead of one per batch). A decision that needs an activity (a compaction,
      // counting the tenant's compactions) still runs where it falls.
      await entity.apply(item.batch);
      while (queue[0]?.kind === 'batch') await entity.apply((queue.shift() as { batch: StoredBatch }).batch);
      await entity.publish();
    } else {
      await run(entity, item);
    }
    const { batches } = entity.state;
    if (queue.length === 0 && batches.latestSeq > batches.appliedSeq && !entity.background.finished) {
      // A batch is known to exist but its notification is missing: wait a little, then count it as applied (its
      // rows are in the log and in every later compaction; only the decisions of its own notification are lost).
      if (!(await condition(() => queue.length > 0 || live.background.finished, gapWaitMs))) {
        skipGaps(batches);
        await entity.publish();
      }
    }
  }
  const carried = entity.carry();
  carried.runs += 1;
  await continueAsNew<typeof conversationWorkflow>({ ...input, carried });
}

/** Works one item, publishes the state (PostgreSQL, Temporal UI), and only then answers an update's caller. */
async function run(entity: ConversationEntity, item: QueueItem): Promise<void> {
  switch (item.kind) {
    case 'batch':
      await entity.apply(item.batch);
      await entity.publish();
      return;
    case 'clientCompaction':
      await adoptClientCompaction(entity, item.compaction);
      await entity.publish();
      return;
    case 'chat': {
      // A failed model call (after its retries) fails this update only; the conversation goes on.
      let outcome: { ok: true; value: TurnOutcome } | { ok: false; error: unknown };
      try {
        outcome = { ok: true, value: await runChatTurn(entity, item.request) };
      } catch (error) {
        outcome = { ok: false, error };
      }
      await entity.publish();
      if (outcome.ok) item.done.resolve(outcome.value);
      else item.done.reject(outcome.error);
      return;
    }
    case 'compact': {
      await entity.applyNotification(item.request.notification);
      const result = await entity.compact('manual', { force: true, focusTopic: item.request.focusTopic ?? null });
      await entity.publish();
      item.done.resolve(result);
      return;
    }
    case 'switchModel': {
      await entity.applyNotification(item.request.notification);
      const status = await switchModel(entity, item.request);
      await entity.publish();
      item.done.resolve(status);
      return;
    }
  }
}

interface OpenedState {
  state: CarriedState;
  notification: NotificationFold | null;
}

async function openState(input: ConversationInput): Promise<OpenedState> {
  const model = input.model;
  const provider = input.provider ?? null;
  const contextLength = resolveWindow(model, provider, input.contextLength ?? null);
  const opened = await store.openConversation({
    tenantId: input.tenantId,
    conversationId: input.conversationId,
    proposedSessionId: newSessionId(Date.now(), uuid4().replace(/-/g, '')),
    model,
    provider,
    contextLength: input.contextLength ?? null,
    source: input.source ?? 'api',
    title: input.title ?? null,
  });
  const fold = opened.quietFold ?? null;
  const state = openingState({
    sessionId: opened.sessionId,
    config: opened.config,
    host: normalizeHostPolicy(opened.host ?? DEFAULT_HOST_POLICY),
    policyVersion: opened.policyVersion,
    cacheTtl: opened.cacheTtl,
    compactionSeq: opened.compactionSeq,
    version: opened.totals.version,
    activeMessages: opened.totals.activeMessages,
    activeTokens: opened.totals.activeTokens,
    // The quiet batches of the fold are counted as applied in the log; the workflow applies them right after.
    batches: {
      appliedSeq: fold ? Math.min(opened.appliedSeq, fold.fromSeq - 1) : opened.appliedSeq,
      ahead: [],
      latestSeq: opened.totals.batchSeq,
    },
    contextLength,
    model,
    provider,
    notifyEpoch: opened.notifyEpoch,
  });
  if (opened.runtime) state.runtime = opened.runtime;
  return { state, notification: fold ? { epoch: opened.notifyEpoch ?? 0, quiet: fold } : null };
}
