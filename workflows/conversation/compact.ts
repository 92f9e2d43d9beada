// One compaction of a conversation (DESIGN.md §3): the child workflow `compact:<tenant>:<session>:<n>` with what the
// engine decided (cooldown, previous summary, limits), then its outcome applied to the conversation — the engine's
// counters, the totals, the fixed-point detector (SPEC §19) and the notice the user sees. A blocking compaction
// (manual, hygiene, or `background: false`) waits for the child; a background one (SPEC §19 `background`) starts it
// and the conversation settles its outcome when the child has finished.
import { startChild, uuid4, workflowInfo } from '@temporalio/workflow';
import type {
  CompactionInput,
  CompactionOutcome,
  CompactionTimeouts,
  CompactionTrigger,
} from '../../contracts/compaction.js';
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

export interface CompactionOptions {
  force?: boolean;
  focusTopic?: string | null;
  beforeRowId?: number | null;
}

/** A started compaction child: its input and its outcome (a failed child becomes a `failed` outcome). */
export interface StartedCompaction {
  input: CompactionInput;
  trigger: CompactionTrigger;
  outcome: Promise<CompactionOutcome>;
}

function childInputOf(
  conversation: CompactingConversation,
  trigger: CompactionTrigger,
  options: CompactionOptions,
): CompactionInput {
  const { state, engine, ids } = conversation;
  engine.beginCompaction({ force: options.force === true });
  state.compactionSeq += 1;
  const inPlace = trigger === 'hygiene' ? true : state.config.inPlace;
  return {
    tenantId: ids.tenantId,
    conversationId: ids.conversationId,
    sessionId: state.sessionId,
    compactionId: uuid4(),
    seq: state.compactionSeq,
    trigger,
    inPlace,
    newSessionId: inPlace ? null : newSessionId(Date.now(), uuid4().replace(/-/g, '')),
    focusTopic: options.focusTopic ?? null,
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
}

/** The child's start command; the promise resolves once the server has started it. */
function startChildOf(conversation: CompactingConversation, input: CompactionInput, trigger: CompactionTrigger) {
  const { state, ids } = conversation;
  return startChild(compactionWorkflow, {
    args: [input],
    workflowId: compactionWorkflowId(ids.tenantId, input.sessionId, input.seq),
    taskQueue: workflowInfo().taskQueue,
    staticSummary: `Compaction #${input.seq} (${trigger}) of ${ids.tenantId}/${ids.conversationId}`,
    typedSearchAttributes: [
      { key: TenantId, value: ids.tenantId },
      { key: ConversationId, value: ids.conversationId },
      { key: SessionId, value: input.sessionId },
      { key: Model, value: state.model },
    ],
  });
}

/** The child failed as a whole (e.g. its record could not be written): the transcript is untouched (§7.6). */
const failedWith = (input: CompactionInput) => (err: unknown) =>
  failedOutcome(input.compactionId, input.sessionId, err);

/** Starts the child; resolves once the server has started it. Its outcome never rejects. */
export async function startCompaction(
  conversation: CompactingConversation,
  trigger: CompactionTrigger,
  options: CompactionOptions = {},
): Promise<StartedCompaction> {
  const input = childInputOf(conversation, trigger, options);
  const failed = failedWith(input);
  try {
    const child = await startChildOf(conversation, input, trigger);
    return { input, trigger, outcome: child.result().catch(failed) };
  } catch (err) {
    return { input, trigger, outcome: Promise.resolve(failed(err)) };
  }
}

/**
 * Issues the child's start and returns at once, without waiting for the server to confirm it (patch
 * `background-start-unawaited`): the turn or batch that triggered a background compaction is answered in the same
 * workflow task. A start the server refuses is a failed outcome, as with startCompaction.
 */
export function launchCompaction(conversation: CompactingConversation, trigger: CompactionTrigger): StartedCompaction {
  const input = childInputOf(conversation, trigger, {});
  const failed = failedWith(input);
  const outcome = startChildOf(conversation, input, trigger)
    .then((child) => child.result())
    .catch(failed);
  return { input, trigger, outcome };
}

/**
 * Applies a finished compaction's outcome to the conversation. `background`: the compaction ran while the
 * conversation went on, so the "next request goes out as is" rule of §7.6 was applied when it started.
 */
export function settleCompaction(
  conversation: CompactingConversation,
  started: Pick<StartedCompaction, 'trigger'>,
  outcome: CompactionOutcome,
  options: { background?: boolean } = {},
): CompactionResult {
  const { state, engine } = conversation;
  const { trigger } = started;
  const automatic = trigger !== 'manual';
  const committed = outcome.status === 'committed' || outcome.status === 'fallback';
  if (committed && automatic && reachedFixedPoint(state.host, outcome.similarity, state.userSinceCompaction)) {
    state.autoPaused = 'fixed_point';
    conversation.notice(NOTICE_FIXED_POINT);
  }
  // SPEC §10.3: the configured engine was not used; the user sees the line too (never silently).
  if (outcome.engineWarning) conversation.notice(outcome.engineWarning);
  const sinceModelCall = state.autoSinceModelCall;
  applyOutcome(state, engine, outcome, { automatic, now: Date.now() });
  if (options.background) state.autoSinceModelCall = sinceModelCall;
  const result: CompactionResult = {
    compactionId: outcome.compactionId,
    trigger,
    status: outcome.status,
    notice: noticeFor(outcome),
    noopReason: outcome.noopReason,
    sessionId: state.sessionId,
    stats: outcome.stats,
    retention: outcome.retention ?? null,
    error: outcome.error,
  };
  state.lastCompaction = result;
  if (result.notice && automatic) conversation.notice(result.notice);
  return result;
}

/** A blocking compaction: starts the child, waits for it, applies its outcome. */
export async function runCompaction(
  conversation: CompactingConversation,
  trigger: CompactionTrigger,
  options: CompactionOptions = {},
): Promise<CompactionResult> {
  const started = await startCompaction(conversation, trigger, options);
  return settleCompaction(conversation, started, await started.outcome);
}
