// The agent turn of chat backend mode and the native checkpoints its replies may carry (SPEC §15.1), run by the
// workflow's main loop on its ConversationEntity: the client's batch is applied (hygiene, preflight), the model is
// called by the respond activity (content stays in PostgreSQL; the result is ids and numbers), then the reply's
// reading is the post-response check — or, for a reply with a native checkpoint, no verdict at all.
import { patched, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ConversationActivities } from '../../activities/conversation.js';
import type { RespondActivities } from '../../activities/respond.js';
import type { ChatTurnRequest, CompactionResult, TurnOutcome } from '../../contracts/conversation.js';
import type { NativeCovered } from '../../engine/nativeCompaction.js';
import { localModelActivityOptions, modelActivityOptions, storeActivityOptions } from '../activityOptions.js';
import { afterAppServerTurn } from './appServer.js';
import type { ConversationEntity } from './entity.js';
import {
  absorbTotals,
  coveredBefore,
  markApplied,
  nativeCompactionId,
  nativeThresholdOf,
  recordNativeCheckpoint,
} from './state.js';

const store = proxyActivities<ConversationActivities>(storeActivityOptions);
const model = proxyActivities<RespondActivities>(modelActivityOptions);
/** The agent turn in the workflow task that takes it (DESIGN.md §3, issue #11): no task round trip per turn. */
const localModel = proxyLocalActivities<RespondActivities>(localModelActivityOptions);
/** Patch id of local turns: histories recorded before it scheduled `respond` as an activity task. */
const LOCAL_RESPOND_PATCH = 'local-respond';

/** A native checkpoint (SPEC §15.1): its record first (best effort), then the state (state.ts). */
export async function takeNativeCheckpoint(
  conversation: ConversationEntity,
  covered: NativeCovered,
  compactionId: string,
): Promise<void> {
  const { ids, state } = conversation;
  const recorded = await conversation.safely('recording the native checkpoint', async () => {
    await store.recordNativeCompaction({ ...ids, sessionId: state.sessionId, compactionId });
    return true;
  });
  recordNativeCheckpoint(state, conversation.engine, covered, recorded ? compactionId : null);
}

/** Chat backend mode: the client's messages are stored; run the model, store the reply, record the reading. */
export async function runChatTurn(conversation: ConversationEntity, request: ChatTurnRequest): Promise<TurnOutcome> {
  const { state, ids } = conversation;
  await conversation.apply(request.batch, { turnFollows: true });
  const responder = patched(LOCAL_RESPOND_PATCH) ? localModel : model;
  const nativeThreshold = nativeThresholdOf(state, conversation.engine);
  const result = await responder.respond({
    tenantId: ids.tenantId,
    conversationId: ids.conversationId,
    sessionId: state.sessionId,
    model: state.model,
    provider: state.provider,
    turnKey: request.turnId,
    tools: request.tools ?? null,
    afterCompactionId: state.cache.watching?.compactionId ?? null,
    ...(request.relay ? { relay: true } : {}),
    ...(nativeThreshold !== null ? { nativeCompactThreshold: nativeThreshold } : {}),
    lastPromptTokens: conversation.engine.exportState().lastPromptTokens,
    ...(request.replyKey ? { replyKey: request.replyKey } : {}),
  });
  absorbTotals(state, result.totals);
  // The reply's batch is decided here (its post-response check follows): no gap behind it, one more decided batch.
  if (typeof result.replySeq === 'number') {
    markApplied(state.batches, result.replySeq, result.replySeq);
    state.processedBatches += 1;
  }
  state.readingBaseTokens = result.totals.activeTokens - result.tokenEstimate;
  await conversation.countTurn(result.usage);
  let compaction: CompactionResult | null = null;
  if (result.appServer) {
    // SPEC §15.2: the app-server compacted (or not) on its own; its compactions are recorded already.
    compaction = await afterAppServerTurn(conversation, {
      usage: result.usage,
      compressionCount: result.appServer.compressionCount,
      compactions: result.appServer.compactions,
    });
  } else if (result.nativeCheckpoint) {
    const id = nativeCompactionId(ids.conversationId, { seq: result.replySeq ?? null, messageId: result.messageId });
    const covered = result.nativeCovered ?? coveredBefore(result.totals, result.tokenEstimate);
    await takeNativeCheckpoint(conversation, covered, id);
  } else compaction = await conversation.afterResponse(result.usage);
  return {
    turnId: request.turnId,
    replyMessageId: result.messageId,
    finishReason: result.finishReason,
    usage: result.usage,
    compaction,
  };
}
