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
import type { TurnRunner } from '../../activities/turnRunner.js';
import type { ConversationClient } from '../../clients/conversationClient.js';
import type {
  ChatTurnRequest,
  IncomingMessage,
  SubmitMessages,
  TurnOutcome,
  TurnResult,
} from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import { validateSubmit } from '../../contracts/validation.js';
import type { ChatMessage } from '../../engine/index.js';
import { getConversationAndRow } from '../../infra/db/conversations.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';
import { ConversationNotFoundError } from '../../infra/db/storeErrors.js';
import { type TurnRecord, turnUsage } from '../../infra/db/turns.js';
import { orderedPieces, type TurnTextListener } from '../../infra/db/turnText.js';
import type { Metrics } from '../../infra/metrics/registry.js';
import type { AppendDecided, AppendDecideOptions } from './batchAppend.js';
import { type RunOutcome, runDirectTurn } from './directTurn.js';
import { ChatUnavailableError, InvalidRequestError } from './errors.js';
import { statusOf, turnIdOf } from './logView.js';
import { TranscriptCache } from './transcriptCache.js';
import { TurnQueue } from './turnQueue.js';
import {
  DEFAULT_TURN_WAITS,
  RulesNotCurrentError,
  type RulesWait,
  rulesWait,
  type TurnWaits,
  waitRules,
} from './turnWaits.js';

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
  ensureWorkflow(tenantId: string, row: ConversationRow): Promise<void>;
  append(
    tenantId: string,
    conversationId: string,
    batch: SubmitMessages,
    options: AppendDecideOptions,
  ): Promise<AppendDecided>;
  notify(tenantId: string, row: ConversationRow, batch: StoredBatch): Promise<void>;
}

/** What a streamed turn hears as it runs (turnStream.ts). */
export interface TurnObserver {
  /** The request's messages are stored (committed); the turn goes on. */
  accepted(): void;
  /** A piece of the reply's text, from a model call running here or relayed from the workflow's. */
  text(delta: string): void;
  /** The text heard so far came from a model call that failed transiently: the turn runs again. */
  discard(): void;
}

export type ChatRequest = {
  messages: IncomingMessage[];
  tools?: ChatTurnRequest['tools'];
  observer?: TurnObserver;
  /** A drop-in turn the workflow runs (SPEC §15.2 app-server routes): how its reply is keyed. */
  replyKey?: ChatTurnRequest['replyKey'];
};

/** Where a turn ran: in the gateway (none of its batches notified, or some), by the workflow, or stored before. */
export type TurnPath = 'gateway_quiet' | 'gateway_notified' | 'workflow' | 'stored';
/** The gateway's chat-turn metrics (infra/metrics/registry.ts). */
export type TurnMetrics = Pick<Metrics, 'chatTurns' | 'chatTurnSeconds' | 'turnRulesWait'>;

/** Where a turn ran, once known (ChatTurns.run), for the time it took. */
interface TurnTrace {
  path?: TurnPath;
}

export class ChatTurns {
  private readonly queue = new TurnQueue();
  /** The transcripts of the turns run here, between turns (transcriptCache.ts). */
  readonly transcripts = new TranscriptCache();

  private readonly waits: Required<TurnWaits>;
  private readonly metrics: TurnMetrics | undefined;
  private readonly relay: TurnTextListener | undefined;

  /**
   * `runner`: runs turns here when the rules allow; null: the workflow runs every turn. `relay`: where the text of a
   * streamed turn the workflow runs is heard (infra/db/turnText.ts); without it, that text comes once stored.
   */
  constructor(
    private readonly host: TurnHost,
    private readonly runner: TurnRunner | null,
    options: { waits?: TurnWaits; metrics?: TurnMetrics; relay?: TurnTextListener } = {},
  ) {
    const waits = options.waits ?? {};
    this.waits = {
      unknownMs: waits.unknownMs ?? DEFAULT_TURN_WAITS.unknownMs,
      judgedMs: waits.judgedMs ?? DEFAULT_TURN_WAITS.judgedMs,
    };
    this.metrics = options.metrics;
    this.relay = options.relay;
  }

  /** Relays the text of the workflow's model call for the turn to a streamed request; null when nothing listens. */
  private async listen(turnId: string, observer: TurnObserver | undefined): Promise<(() => Promise<void>) | null> {
    if (!observer || !this.relay) return null;
    const pieces = orderedPieces({ text: (text) => observer.text(text), restart: () => observer.discard() });
    // A listener that cannot connect leaves the stream as without one: the text once stored.
    return this.relay.subscribe(turnId, pieces).catch(() => null);
  }

  async chatTurn(tenantId: string, conversationId: string, request: ChatRequest): Promise<ChatTurnReply> {
    const problem = validateSubmit({ messages: request.messages });
    if (problem) throw new InvalidRequestError(problem);
    const turnId = turnIdOf(conversationId, request.messages);
    const trace: TurnTrace = {};
    const timer = this.metrics?.chatTurnSeconds.startTimer();
    const reply = await this.answer(tenantId, conversationId, turnId, request, trace);
    if (trace.path) timer?.({ path: trace.path });
    return reply;
  }

  private async answer(
    tenantId: string,
    conversationId: string,
    turnId: string,
    request: ChatRequest,
    trace: TurnTrace,
  ): Promise<ChatTurnReply> {
    // The turn takes its place in the conversation's queue as it arrives, before anything it awaits.
    const { outcome, answered } = await this.queue.run(`${tenantId}\n${conversationId}`, () =>
      this.run(tenantId, conversationId, turnId, request, trace),
    );
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

  /**
   * The workflow is still deciding (on a batch notified before, or after voiding its rules): its next rules, published
   * within a workflow task, may let the turn run here, and quiet.
   */
  private async waitRules(tenantId: string, conversationId: string, wait: RulesWait): Promise<void> {
    const started = performance.now();
    const waited = await waitRules(this.host.readDb, tenantId, conversationId, wait);
    // Counted when a publication was awaited (with or without it coming in time), not when none could come.
    if (waited) this.metrics?.turnRulesWait.observe({ standing: wait.standing }, (performance.now() - started) / 1000);
  }

  private count(path: TurnPath, trace: TurnTrace): void {
    trace.path = path;
    this.metrics?.chatTurns.inc({ path });
  }

  /** A turn an earlier attempt stored: its outcome. */
  private storedBefore(turnId: string, turn: TurnRecord, trace: TurnTrace): RunOutcome {
    this.count('stored', trace);
    return { outcome: storedOutcome(turnId, turn) };
  }

  private async run(
    tenantId: string,
    conversationId: string,
    turnId: string,
    request: ChatRequest,
    trace: TurnTrace,
  ): Promise<RunOutcome> {
    const messages = { messages: request.messages };
    const { runner, host } = this;
    const options = { loud: !runner, turnId, direct: !!runner, transcripts: this.transcripts };
    // The conversation's row is judged as the append locks it, before anything is written (no read of its own: a
    // round trip per turn): a conversation its provider cannot serve is refused; when the workflow's rules are not
    // current for the turn (rulesWait), nothing is stored and the turn waits for them, once, then appends again.
    const available = (head: ConversationRow) => {
      const unavailable = host.chatProblem(head);
      if (unavailable) throw new ChatUnavailableError(unavailable);
    };
    const admit = (head: ConversationRow) => {
      available(head);
      const due = runner ? rulesWait(head, this.waits) : null;
      if (due) throw new RulesNotCurrentError(due);
    };
    let appended: AppendDecided;
    try {
      appended = await host.append(tenantId, conversationId, messages, { ...options, admit });
    } catch (err) {
      if (!(err instanceof RulesNotCurrentError)) throw err;
      await this.waitRules(tenantId, conversationId, err.wait);
      appended = await host.append(tenantId, conversationId, messages, { ...options, admit: available });
    }
    const { observer } = request;
    observer?.accepted();
    if (appended.turn?.messageId != null) {
      // Stored by an earlier attempt; while something accepted is still undecided (e.g. that attempt's notification
      // was lost), the workflow hears again, as from a retried post.
      if (appended.decision.notify) await host.notify(tenantId, appended.head, withNotification(appended));
      return this.storedBefore(turnId, appended.turn, trace);
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
      let heard = false;
      const onText = observer
        ? (delta: string) => {
            heard = true;
            observer.text(delta);
          }
        : undefined;
      try {
        direct = await runDirectTurn(
          runner,
          {
            ...{ tenantId, conversationId, turnId, head, rows: context, readVersion: stored.version },
            ...(request.tools ? { tools: request.tools } : {}),
            ...(onText ? { onText } : {}),
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
        this.count(decision.notify || direct.notified ? 'gateway_notified' : 'gateway_quiet', trace);
        return direct;
      }
      // The model failed transiently: the workflow runs the turn with its durable retries (the batch is stored and
      // decided; the workflow hears of it again, as of a retried request's).
      if (heard) observer?.discard();
      appended = await host.append(tenantId, conversationId, messages, { loud: true, turnId });
      if (appended.turn?.messageId != null) return this.storedBefore(turnId, appended.turn, trace);
    }
    if (!appended.decision.notify || !appended.decision.notification) {
      // The batch was stored before (a retried request): the update opens a new epoch and carries the fold, as
      // every notification the workflow decides on must.
      appended = await host.append(tenantId, conversationId, messages, { loud: true, turnId });
      if (appended.turn?.messageId != null) return this.storedBefore(turnId, appended.turn, trace);
    }
    await host.ensureWorkflow(tenantId, appended.head);
    this.count('workflow', trace);
    const unlisten = await this.listen(turnId, observer);
    try {
      const outcome = await host.temporal.chatTurn(tenantId, conversationId, {
        turnId,
        batch: withNotification(appended),
        ...(request.tools ? { tools: request.tools } : {}),
        ...(unlisten ? { relay: true } : {}),
        ...(request.replyKey ? { replyKey: request.replyKey } : {}),
      });
      return { outcome };
    } finally {
      await unlisten?.();
    }
  }
}

/** The append's batch with the notification it opened, if any. */
function withNotification({ stored, decision }: AppendDecided): StoredBatch {
  return decision.notify && decision.notification ? { ...stored, notification: decision.notification } : stored;
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
