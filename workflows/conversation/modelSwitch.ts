// Model switches of a conversation (SPEC §4.5, §4.6), run by the workflow's main loop on its ConversationEntity:
// the window re-derived from the raw configuration, never silent about the cache, and the one-time autoraise notice.
import { proxyActivities } from '@temporalio/workflow';
import type { ConversationActivities } from '../../activities/conversation.js';
import type { ConversationStatus, SwitchModelRequest } from '../../contracts/conversation.js';
import { NOTICE_MODEL_SWITCH } from '../../engine/index.js';
import { storeActivityOptions } from '../activityOptions.js';
import { refreshRuntime } from './appServer.js';
import type { ConversationEntity } from './entity.js';
import { resolveWindow } from './window.js';

const store = proxyActivities<ConversationActivities>(storeActivityOptions);

/** SPEC §4.6: re-derive from the raw configuration; never silent about the cache. */
export async function switchModel(
  conversation: ConversationEntity,
  request: SwitchModelRequest,
): Promise<ConversationStatus> {
  const { state } = conversation;
  const provider = request.provider === undefined ? state.provider : request.provider;
  const contextLength = resolveWindow(request.model, provider, request.contextLength ?? null);
  const changed = request.model !== state.model || provider !== state.provider;
  conversation.engine.updateModel(request.model, contextLength, provider ?? undefined);
  // Another route gets the whole transcript (a native checkpoint goes back only to its issuer, SPEC §15.1): the
  // reading taken on the checkpointed request no longer measures what is sent, so the estimate is the transcript's.
  if (provider !== state.provider && state.nativeBase) {
    state.nativeBase = null;
    conversation.engine.restoreState({ ...conversation.engine.exportState(), lastPromptTokens: 0 });
  }
  const previousProvider = state.provider;
  Object.assign(state, { model: request.model, provider, contextLength });
  // SPEC §15.2: who owns the context may change with the provider.
  if (provider !== previousProvider) await refreshRuntime(conversation);
  if (changed) conversation.notice(NOTICE_MODEL_SWITCH);
  await autoraiseNotice(conversation);
  return conversation.status();
}

/** SPEC §4.5: the one-time gpt-5.5 Codex notice, persisted per tenant by the activity. */
export async function autoraiseNotice(conversation: ConversationEntity): Promise<void> {
  const { state, ids } = conversation;
  const text = await conversation.safely('the autoraise notice', () =>
    store.autoraiseNotice({
      tenantId: ids.tenantId,
      model: state.model,
      provider: state.provider,
      contextLength: state.contextLength,
      config: state.config,
    }),
  );
  if (text) conversation.notice(text);
}
