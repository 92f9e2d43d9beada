// A drop-in client's own compaction (issue #12), run by the workflow's main loop on its ConversationEntity: the
// gateway committed it as a new session of the conversation (infra/db/clientCompaction.ts) and signalled it.
import type { ClientCompaction } from '../../contracts/conversation.js';
import { NOTICE_CLIENT_COMPACTS } from './brakes.js';
import type { ConversationEntity } from './entity.js';
import { absorbTotals } from './state.js';

/**
 * A background compaction of the old session is settled first (what it committed is superseded); then the new
 * session is the conversation's, no reading of the old transcript is a verdict on it, and automatic compaction
 * pauses for good — the client manages its context; the safety net (SPEC §11) still applies. Adopted once: the
 * gateway tells again when it cannot know that the workflow heard (workers/gateway/dropin/clientRotation.ts).
 */
export async function adoptClientCompaction(
  conversation: ConversationEntity,
  compaction: ClientCompaction,
): Promise<void> {
  if (conversation.state.lastCommittedCompactionId === compaction.compactionId) return;
  await conversation.background.wait();
  const { state, engine } = conversation;
  state.sessionId = compaction.sessionId;
  state.lastCommittedCompactionId = compaction.compactionId;
  absorbTotals(state, compaction);
  state.lastCommitVersion = Math.max(state.lastCommitVersion, compaction.version);
  state.readingBaseTokens = state.activeTokens;
  state.nativeBase = null;
  state.userSinceCompaction = false;
  // The client's summary is not ours: a later compaction of the new session starts its own.
  engine.restoreState({ ...engine.exportState(), lastPromptTokens: 0, previousSummary: null });
  if (state.autoPaused !== 'client') conversation.notice(NOTICE_CLIENT_COMPACTS);
  state.autoPaused = 'client';
}
