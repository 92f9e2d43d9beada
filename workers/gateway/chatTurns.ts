// Chat backend mode in the gateway (issue #11 §2: Temporal only where it decides something). Turns of one
// conversation run one at a time, in arrival order (TurnQueue, as the workflow's queue runs them). A turn runs here
// when the workflow's published rules (engine/quietBatches.ts) say its user batch decides nothing — chat turns
// included: background compaction on — or that whatever the workflow decides on it cannot change what the model is
// sent (no hygiene can run): that batch is then notified first. The transcript read with the batch, under the same
// lock, is what the model gets; the reply is stored with its turn record in one transaction and its batch judged by
// the same rules: quiet (folded, with the turn's usage for the status; a cache recovery it completes is written to
// the compaction's record at once) or notified (the workflow runs the post-response check, e.g. starts a background
// compaction, and accounts the turn). Such a turn costs no workflow task of its own. Any other turn is the
// workflow's (the chat-turn update), and so is one whose model call failed transiently here (its durable retries);
// a permanent failure answers at once, as it would there.
import type { Kysely } from 'kysely';
import type { TurnCall, TurnRunner } from '../../activities/respond.js';
import type { ConversationClient } from '../../clients/conversationClient.js';
import type {
  CacheRecovery,
  ChatTurnRequest,
  IncomingMessage,
  SubmitMessages,
  TurnOutcome,
  TurnResult,
} from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import { validateSubmit } from '../../contracts/validation.js';
import type { ChatMessage } from '../../engine/index.js';
import { foldQuiet } from '../../engine/index.js';
import { getConversationAndRow, waitApplied } from '../../infra/db/conversations.js';
import { toStoredMessage } from '../../infra/db/messageRows.js';
import type { StoredMessage } from '../../infra/db/messages.js';
import { decideNotification, type NotifyDecision } from '../../infra/db/quietBatches.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';
import { ConversationNotFoundError } from '../../infra/db/storeErrors.js';
import { type TurnRecord, turnUsage } from '../../infra/db/turns.js';
import { isTransientFailure } from '../../infra/llm/errors.js';
import type { ChatTool } from '../../infra/llm/types.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import { recoveryCompletedBy } from '../../workflows/conversation/cacheTelemetry.js';
import type { AppendDecided, AppendDecideOptions } from './batchAppend.js';
import { ChatUnavailableError, HttpError, InvalidRequestError } from './errors.js';
import { statusOf, storedBatchOf, turnIdOf } from './logView.js';
import { TranscriptCache } from './transcriptCache.js';
import { TurnQueue } from './turnQueue.js';
import { rulesWait, type TurnWaits } from './turnWaits.js';

export interface ChatTurnReply extends Omit<TurnResult, 'replyMessageId'> {
  reply: ChatMessage;
  /** The calls the client must run; it then sends their results with the next chat turn. */
  toolCalls: NonNullable<ChatMessage['tool_calls']>;
  replyMessageId: number;
}

/** What a chat turn needs of the conversations (workers/gateway/conversations.ts). */
export interface TurnHost {
  readonly db: Kysely<Database>;
  readonly readDb: Kysely<Database>;
  readonly temporal: ConversationClient;
  chatProblem(row: ConversationRow): string | null;
  require(tenantId: string, conversationId: string): Promise<ConversationRow>;
  ensureWorkflow(tenantId: string, row: ConversationRow): Promise<void>;
  append(
    tenantId: string,
    conversationId: string,
    batch: SubmitMessages,
    options: AppendDecideOptions,
  ): Promise<AppendDecided>;
  notify(tenantId: string, row: ConversationRow, batch: StoredBatch): Promise<void>;
}

type ChatRequest = { messages: IncomingMessage[]; tools?: ChatTurnRequest['tools'] };

/** Where a turn ran: in the gateway (none of its batches notified, or some), by the workflow, or stored before. */
export type TurnPath = 'gateway_quiet' | 'gateway_notified' | 'workflow' | 'stored';
/** The gateway's chat-turn metrics (infra/metrics/registry.ts). */
export type TurnMetrics = Pick<Metrics, 'chatTurns' | 'turnRulesWait'>;

export class ChatTurns {
  private readonly queue = new TurnQueue();
  /** The transcripts of the turns run here, between turns (transcriptCache.ts). */
  readonly transcripts = new TranscriptCache();

  private readonly waits: Required<TurnWaits>;
  private readonly metrics: TurnMetrics | undefined;

  /** `runner`: runs turns here when the rules allow; null: the workflow runs every turn. */
  constructor(
    private readonly host: TurnHost,
    private readonly runner: TurnRunner | null,
    options: { waits?: TurnWaits; metrics?: TurnMetrics } = {},
  ) {
    const waits = options.waits ?? {};
    this.waits = { unknownMs: waits.unknownMs ?? 250, judgedMs: waits.judgedMs ?? 100 };
    this.metrics = options.metrics;
  }

  async chatTurn(tenantId: string, conversationId: string, request: ChatRequest): Promise<ChatTurnReply> {
    const problem = validateSubmit({ messages: request.messages });
    if (problem) throw new InvalidRequestError(problem);
    const turnId = turnIdOf(conversationId, request.messages);
    // The turn takes its place in the conversation's queue as it arrives, before anything it awaits.
    const { outcome, answered } = await this.queue.run(`${tenantId}\n${conversationId}`, async () => {
      const row = await this.host.require(tenantId, conversationId);
      const unavailable = this.host.chatProblem(row);
      if (unavailable) throw new ChatUnavailableError(unavailable);
      return this.run(tenantId, conversationId, row, turnId, request);
    });
    if (answered) {
      // Stored here: the reply as it reads back, the status from the row its statement wrote.
      const turn: TurnResult = { ...outcome, status: statusOf(tenantId, answered.head) };
      return { ...turn, reply: answered.reply, toolCalls: answered.reply.tool_calls ?? [] };
    }
    // The status and the reply come from PostgreSQL, in one read (the workflow published before answering).
    const { conversation: head, row: reply } = await getConversationAndRow(
      this.host.readDb,
      tenantId,
      conversationId,
      outcome.replyMessageId,
    );
    if (!head) throw new ConversationNotFoundError(conversationId);
    if (!reply) throw new Error(`turn ${turnId}: reply row ${outcome.replyMessageId} is missing`);
    const turn: TurnResult = { ...outcome, status: statusOf(tenantId, head) };
    return { ...turn, reply: reply.message, toolCalls: reply.message.tool_calls ?? [] };
  }

  private count(path: TurnPath): void {
    this.metrics?.chatTurns.inc({ path });
  }

  /** A turn an earlier attempt stored: its outcome. */
  private storedBefore(turnId: string, turn: TurnRecord): RunOutcome {
    this.count('stored');
    return { outcome: storedOutcome(turnId, turn) };
  }

  private async run(
    tenantId: string,
    conversationId: string,
    row: ConversationRow,
    turnId: string,
    request: ChatRequest,
  ): Promise<RunOutcome> {
    const messages = { messages: request.messages };
    const { runner, host } = this;
    const wait = runner ? rulesWait(row, this.waits) : null;
    if (wait) {
      // The workflow is still deciding on a batch notified before: its next rules, published within a workflow
      // task, may let this turn run here, and quiet.
      const waited = this.metrics?.turnRulesWait.startTimer({ standing: wait.standing });
      await waitApplied(host.readDb, tenantId, conversationId, row.batch_seq, { timeoutMs: wait.ms, intervalMs: 5 });
      waited?.();
    }
    let appended = await host.append(tenantId, conversationId, messages, {
      loud: !runner,
      turnId,
      direct: !!runner,
      transcripts: this.transcripts,
    });
    if (appended.turn?.messageId != null) {
      // Stored by an earlier attempt; while something accepted is still undecided (e.g. that attempt's notification
      // was lost), the workflow hears again, as from a retried post.
      if (appended.decision.notify) await host.notify(tenantId, appended.head, withNotification(appended));
      return this.storedBefore(turnId, appended.turn);
    }
    if (runner && appended.context) {
      const { head, context, stored, decision } = appended;
      // A batch that is not quiet is notified as the model is called: its notification leaves first (one held back
      // for the model's time would let a later batch's open a gap the workflow skips), and is answered before
      // anything that must come after it — the reply's notification, the workflow's turn. The model call does not
      // wait for Temporal's answer: no decision on this batch can change what the model is sent.
      let told: Promise<void> = Promise.resolve();
      if (decision.notify) {
        const notification = decision.notification ? { notification: decision.notification } : {};
        told = host.notify(tenantId, head, { ...stored, turnFollows: true, ...notification });
        told.catch(() => undefined); // observed below, whatever the model does
      }
      let direct: RunOutcome | null;
      try {
        direct = await runDirectTurn(
          runner,
          {
            ...{ tenantId, conversationId, turnId, head, rows: context, readVersion: stored.version },
            ...(request.tools ? { tools: request.tools } : {}),
          },
          async (reply) => {
            await told;
            await host.notify(tenantId, head, reply);
          },
        );
      } catch (err) {
        // The model's answer (e.g. 422) is what the caller needs; a failed notification leaves the batch to the next.
        await told.catch(() => undefined);
        throw err;
      }
      await told;
      if (direct) {
        this.count(decision.notify || direct.notified ? 'gateway_notified' : 'gateway_quiet');
        return direct;
      }
      // The model failed transiently: the workflow runs the turn with its durable retries (the batch is stored and
      // decided; the workflow hears of it again, as of a retried request's).
      appended = await host.append(tenantId, conversationId, messages, { loud: true, turnId });
      if (appended.turn?.messageId != null) return this.storedBefore(turnId, appended.turn);
    }
    if (!appended.decision.notify || !appended.decision.notification) {
      // The batch was stored before (a retried request): the update opens a new epoch and carries the fold, as
      // every notification the workflow decides on must.
      appended = await host.append(tenantId, conversationId, messages, { loud: true, turnId });
      if (appended.turn?.messageId != null) return this.storedBefore(turnId, appended.turn);
    }
    await host.ensureWorkflow(tenantId, row);
    this.count('workflow');
    const outcome = await host.temporal.chatTurn(tenantId, conversationId, {
      turnId,
      batch: withNotification(appended),
      ...(request.tools ? { tools: request.tools } : {}),
    });
    return { outcome };
  }
}

/** The append's batch with the notification it opened, if any. */
function withNotification({ stored, decision }: AppendDecided): StoredBatch {
  return decision.notify && decision.notification ? { ...stored, notification: decision.notification } : stored;
}

/** A turn's outcome, and its answer when this gateway stored the reply itself (no read needed). */
interface RunOutcome {
  outcome: TurnOutcome;
  answered?: { head: ConversationRow; reply: ChatMessage };
  /** The reply's batch was notified (it was not quiet). */
  notified?: boolean;
}

/** The outcome of a turn an earlier attempt stored (its reply and turn record). */
function storedOutcome(turnId: string, done: TurnRecord): TurnOutcome {
  return {
    turnId,
    replyMessageId: done.messageId as number,
    finishReason: done.finishReason,
    usage: turnUsage(done),
    compaction: null,
  };
}

interface DirectTurn {
  tenantId: string;
  conversationId: string;
  turnId: string;
  /** The conversation's row as the user batch's append locked it (the workflow's published state). */
  head: ConversationRow;
  /** The active transcript read in the user batch's transaction, user batch included, and its version. */
  rows: readonly StoredMessage[];
  readVersion: number;
  tools?: ChatTool[];
}

/** Tells the workflow of the turn's reply batch when that is not quiet. */
type NotifyBatch = (reply: StoredBatch) => Promise<void>;

/**
 * Runs the turn; null when the model failed transiently (the caller hands the turn to the workflow). A reply some
 * other attempt stored first is that attempt's outcome.
 */
async function runDirectTurn(runner: TurnRunner, turn: DirectTurn, notify: NotifyBatch): Promise<RunOutcome | null> {
  const published = turn.head.state;
  const input = {
    tenantId: turn.tenantId,
    conversationId: turn.conversationId,
    sessionId: turn.head.current_session_id,
    // The model the workflow decides with (a switch is published before the rules allow a turn here again).
    model: published?.model ?? turn.head.model,
    provider: published ? published.provider : turn.head.provider,
    turnKey: turn.turnId,
    tools: turn.tools ?? null,
    // The compaction whose cache recovery the workflow measures, as it published it (the turn record's telemetry).
    afterCompactionId: published?.cache?.watching?.compactionId ?? null,
  };
  let call: TurnCall;
  try {
    call = await runner.call(input, turn.rows);
  } catch (err) {
    if (isTransientFailure(err)) return null;
    // As the workflow's turn fails for good (gateway/errors.ts maps its update failure the same way).
    throw new HttpError(422, err instanceof Error ? err.message : String(err));
  }
  let reply: StoredBatch | undefined;
  let decision: NotifyDecision = { notify: false };
  let recovery: CacheRecovery | null = null;
  const stored = await runner.store(input, call, (result, locked) => {
    const { usage } = call.result;
    reply = {
      ...storedBatchOf(result, {
        messages: [{ message: call.result.message, idempotencyKey: turn.turnId }],
        usage: {
          prompt_tokens: usage.prompt_tokens,
          completion_tokens: usage.completion_tokens,
          total_tokens: usage.total_tokens,
        },
      }),
      // Counted once: a reply another attempt stored first is that attempt's turn.
      ...(result.appended.length > 0 ? { turn: usage, readVersion: turn.readVersion } : {}),
    };
    const decided = decideNotification(locked, reply);
    decision = decided.decision;
    // A quiet reply that completes the cache-recovery measurement the workflow published: on the compaction's
    // record now (the workflow records the same when the fold reaches it, perhaps much later).
    // The fold is recomputed only while a measurement runs (decideNotification folded it for the row already).
    const published = locked.state?.cache;
    recovery =
      decided.decision.notify || !published?.watching
        ? null
        : recoveryCompletedBy(published, locked.quiet_fold, foldQuiet(locked.quiet_fold, reply));
    return decided.set;
  });
  const outcome = stored ? stored.result : await runner.storedTurn(input);
  if (!outcome) throw new Error(`turn ${turn.turnId}: the reply was stored by another attempt but its turn is missing`);
  const notifying = decision as NotifyDecision;
  if (reply && notifying.notify) {
    await notify(notifying.notification ? { ...reply, notification: notifying.notification } : reply);
  }
  const completed = recovery as CacheRecovery | null;
  if (stored && completed) {
    // Best effort: the reply is stored and answered either way; the workflow writes the same when the fold reaches it.
    await runner.recordCacheRecovery(turn.tenantId, completed).catch((err: unknown) => {
      console.warn(`cache recovery of ${completed.compactionId} not recorded yet: ${(err as Error).message}`);
    });
  }
  const result: TurnOutcome = {
    turnId: turn.turnId,
    replyMessageId: outcome.messageId,
    finishReason: outcome.finishReason,
    usage: outcome.usage,
    // A compaction the reply triggers runs in the background (the rules allow turns here only with SPEC §19
    // `background` on).
    compaction: null,
  };
  const written = stored?.appended.written;
  const notified = notifying.notify;
  return written
    ? { outcome: result, answered: { head: written, reply: toStoredMessage(call.result.message) }, notified }
    : { outcome: result, notified };
}
