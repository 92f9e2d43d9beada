// Codex app-server sessions in the conversation workflow (SPEC §15.2): the app-server owns the thread's context, so
// the local compressor never compacts them (entity.ts asks `ownedByAppServer` before every automatic check). The
// workflow records what the app-server reports — each compaction is already stored by the activity that saw it; the
// workflow takes over the session's compression_count and the reading after it — and asks the app-server to
// compact: on `/compress`, and in mode `hermes` when the host's own threshold says so on a real reading.
import { patched, proxyActivities } from '@temporalio/workflow';
import type { AppServerActivities, AppServerCompactOutcome } from '../../activities/codexAppServer.js';
import type { ConversationActivities } from '../../activities/conversation.js';
import type { CompactionTrigger } from '../../contracts/compaction.js';
import type { CompactionResult, TurnResult } from '../../contracts/conversation.js';
import { HEARTBEAT_TIMEOUT_SECONDS, storeActivityOptions } from '../activityOptions.js';
import type { ConversationEntity } from './entity.js';

const store = proxyActivities<ConversationActivities>(storeActivityOptions);
/** Patch id: a model switch asks who owns the new provider's context (histories before it did not). */
const SWITCH_RUNTIME_PATCH = 'app-server-runtime';
/** Patch id: an app-server compaction's cache economics are measured (histories before it measured none). */
const CACHE_WATCH_PATCH = 'app-server-cache-watch';

/**
 * The cached prefix after an app-server compaction is new (SPEC §12.3): the turns after it measure what it cost —
 * re-written tokens, turns until reads recover — on its record, as after a local compaction (issue #13 "cache
 * economics for native paths"). A measurement already running is kept.
 */
function watchCache(conversation: ConversationEntity, compactionIds: readonly string[]): void {
  const compactionId = compactionIds.at(-1);
  if (compactionId === undefined || !patched(CACHE_WATCH_PATCH)) return;
  const { cache } = conversation.state;
  if (cache.watching === null) cache.watching = { compactionId, turnsSince: 0, rewriteTokens: null };
}

/** After a model switch: the new provider's runtime. */
export async function refreshRuntime(conversation: ConversationEntity): Promise<void> {
  if (!patched(SWITCH_RUNTIME_PATCH)) return;
  const runtime = await conversation.safely('resolving the provider’s runtime', () =>
    store.conversationRuntime({ provider: conversation.state.provider }),
  );
  conversation.state.runtime = runtime;
}

/**
 * The session's count as the log has it (-1: no compaction reported), and the turn's reading. A compaction the host
 * asked for leaves no reading: the next turn's is the verdict (the compaction request measured the whole history).
 */
function takeOver(conversation: ConversationEntity, compressionCount: number, usage: TurnResult['usage'] | null) {
  const { engine } = conversation;
  if (compressionCount >= 0) engine.restoreState({ ...engine.exportState(), compressionCount });
  if (usage && usage.prompt_tokens > 0) engine.updateFromResponse(usage);
  else if (compressionCount >= 0) engine.restoreState({ ...engine.exportState(), lastPromptTokens: 0 });
}

/**
 * An app-server turn's reply: its reading and the compactions the app-server reported in it. In mode `hermes` the
 * host's threshold may then ask for a compaction (at most one between two model calls, like the local one).
 */
export async function afterAppServerTurn(
  conversation: ConversationEntity,
  turn: { usage: TurnResult['usage']; compressionCount: number; compactions?: readonly string[] },
): Promise<CompactionResult | null> {
  const { state, engine } = conversation;
  state.runtime = 'codex_app_server';
  takeOver(conversation, turn.compressionCount, turn.usage);
  watchCache(conversation, turn.compactions ?? []);
  state.autoSinceModelCall = false;
  if (state.config.codexAppServerAuto !== 'hermes' || !state.config.enabled) return null;
  if (!engine.shouldCompress(turn.usage.prompt_tokens)) return null;
  state.autoSinceModelCall = true;
  return compactOnAppServer(conversation, 'post_response');
}

function resultOf(
  conversation: ConversationEntity,
  trigger: CompactionTrigger,
  outcome: AppServerCompactOutcome,
): CompactionResult {
  const failed = outcome.status === 'failed';
  return {
    compactionId: outcome.compactionIds.at(-1) ?? '',
    trigger,
    status: outcome.status,
    notice: failed ? `Compaction on the Codex app-server failed; nothing changed: ${outcome.error}` : null,
    noopReason: outcome.status === 'noop' ? 'the Codex app-server thread has nothing to compact yet' : null,
    sessionId: conversation.state.sessionId,
    stats: null,
    retention: null,
    error: outcome.error,
  };
}

/** `thread/compact/start`, waited for at most `compaction_ceiling_seconds`; on failure nothing changes. */
export async function compactOnAppServer(
  conversation: ConversationEntity,
  trigger: CompactionTrigger,
): Promise<CompactionResult> {
  const { state, ids, engine } = conversation;
  const ceiling = state.config.compactionCeilingSeconds;
  const appServer = proxyActivities<AppServerActivities>({
    startToCloseTimeout: `${Math.ceil(ceiling) + 30} seconds`,
    heartbeatTimeout: `${HEARTBEAT_TIMEOUT_SECONDS} seconds`,
    retry: { maximumAttempts: 1 },
  });
  let outcome: AppServerCompactOutcome;
  try {
    outcome = await appServer.compactAppServer({
      tenantId: ids.tenantId,
      conversationId: ids.conversationId,
      model: state.model,
      provider: state.provider,
      lastPromptTokens: engine.exportState().lastPromptTokens,
      timeoutMs: Math.round(ceiling * 1000),
    });
  } catch (err) {
    const message = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    outcome = { status: 'failed', compactionIds: [], compressionCount: -1, error: message };
  }
  takeOver(conversation, outcome.compressionCount, null);
  watchCache(conversation, outcome.compactionIds);
  const result = resultOf(conversation, trigger, outcome);
  state.lastCompaction = result;
  if (result.notice && trigger !== 'manual') conversation.notice(result.notice);
  return result;
}
