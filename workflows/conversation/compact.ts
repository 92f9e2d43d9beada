// One compaction of a conversation (DESIGN.md §3): the child workflow `compact:<tenant>:<session>:<n>` with what the
// engine decided (cooldown, previous summary, limits), then its outcome applied to the conversation — the engine's
// counters, the totals, the fixed-point detector (SPEC §19) and the notice the user sees.
import { executeChild, uuid4, workflowInfo } from '@temporalio/workflow';
import type { CompactionInput, CompactionTimeouts, CompactionTrigger } from '../../contracts/compaction.js';
import type { CompactionResult } from '../../contracts/conversation.js';
import type { ContextCompressor } from '../../engine/index.js';
import { compactionWorkflow } from '../compaction.js';
import { compactionWorkflowId, newSessionId } from '../ids.js';
import { ConversationId, Model, SessionId, TenantId } from '../searchAttributes.js';
import { NOTICE_FIXED_POINT, reachedFixedPoint } from './brakes.js';
import { noticeFor } from './notices.js';
import { applyOutcome, failedOutcome } from './outcome.js';
import type { CarriedState } from './state.js';

/** What a compaction needs of its conversation (ConversationEntity). */
export interface CompactingConversation {
  readonly ids: { tenantId: string; conversationId: string; source: string };
  readonly state: CarriedState;
  readonly engine: ContextCompressor;
  readonly timeouts: CompactionTimeouts;
  notice(text: string): void;
}

export async function runCompaction(
  conversation: CompactingConversation,
  trigger: CompactionTrigger,
  options: { force?: boolean; focusTopic?: string | null; beforeRowId?: number | null } = {},
): Promise<CompactionResult> {
  const { state, engine, ids } = conversation;
  engine.beginCompaction({ force: options.force === true });
  state.compactionSeq += 1;
  const seq = state.compactionSeq;
  const inPlace = trigger === 'hygiene' ? true : state.config.inPlace;
  const childInput: CompactionInput = {
    tenantId: ids.tenantId,
    conversationId: ids.conversationId,
    sessionId: state.sessionId,
    compactionId: uuid4(),
    seq,
    trigger,
    inPlace,
    newSessionId: inPlace ? null : newSessionId(Date.now(), uuid4().replace(/-/g, '')),
    focusTopic: options.focusTopic ?? null,
    previousSummary: engine.exportState().previousSummary,
    summaryAllowed: !engine.summaryCooldownActive(),
    abortOnSummaryFailure: state.config.abortOnSummaryFailure,
    // SPEC §19 minimum gain for automatic compactions (hygiene: at least 1, §11.3); a manual one always commits.
    requiredGain: trigger === 'manual' ? null : Math.max(state.host.minGainTokens, trigger === 'hygiene' ? 1 : 0),
    beforeRowId: options.beforeRowId ?? null,
    platform: ids.source,
    limits: {
      protectFirstN: state.config.protectFirstN,
      protectLastN: state.config.protectLastN,
      minTailUserMessages: state.config.minTailUserMessages,
      tailTokenBudget: engine.tailTokenBudget,
    },
    contextLength: state.contextLength,
    timeouts: conversation.timeouts,
  };
  let outcome: Awaited<ReturnType<typeof compactionWorkflow>>;
  try {
    outcome = await executeChild(compactionWorkflow, {
      args: [childInput],
      workflowId: compactionWorkflowId(ids.tenantId, state.sessionId, seq),
      taskQueue: workflowInfo().taskQueue,
      staticSummary: `Compaction #${seq} (${trigger}) of ${ids.tenantId}/${ids.conversationId}`,
      typedSearchAttributes: [
        { key: TenantId, value: ids.tenantId },
        { key: ConversationId, value: ids.conversationId },
        { key: SessionId, value: state.sessionId },
        { key: Model, value: state.model },
      ],
    });
  } catch (err) {
    // The child failed as a whole (e.g. its record could not be written): the transcript is untouched (§7.6).
    outcome = failedOutcome(childInput.compactionId, state.sessionId, err);
  }
  const automatic = trigger !== 'manual';
  const committed = outcome.status === 'committed' || outcome.status === 'fallback';
  if (committed && automatic && reachedFixedPoint(state.host, outcome.similarity, state.userSinceCompaction)) {
    state.autoPaused = 'fixed_point';
    conversation.notice(NOTICE_FIXED_POINT);
  }
  applyOutcome(state, engine, outcome, { automatic, now: Date.now() });
  const result: CompactionResult = {
    compactionId: outcome.compactionId,
    trigger,
    status: outcome.status,
    notice: noticeFor(outcome),
    noopReason: outcome.noopReason,
    sessionId: state.sessionId,
    stats: outcome.stats,
    error: outcome.error,
  };
  state.lastCompaction = result;
  if (result.notice && automatic) conversation.notice(result.notice);
  return result;
}
