// Conversations as the gateway (and the tests through it) use them (DESIGN.md §3): PostgreSQL is the
// conversation log, the workflow decides. `submit` commits the batch in one tenant-scoped transaction and only then
// tells the workflow, with a content-free StoredBatch; reads come from PostgreSQL and never need the worker; what
// needs the workflow (chat turns, manual compaction, model switch) is accepted within a bounded time or refused as
// unavailable.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { RespondDeps } from '../../activities/respond.js';
import { createTurnRunner } from '../../activities/turnRunner.js';
import { type ConversationClient, TemporalUnavailableError } from '../../clients/conversationClient.js';
import type { ReplayResult } from '../../contracts/compactionActivities.js';
import type {
  ClientCompaction,
  CompactionResult,
  CompactRequest,
  ConversationInput,
  ConversationStatus,
  SubmitMessages,
  SwitchModelRequest,
} from '../../contracts/conversation.js';
import type { StoredBatch } from '../../contracts/conversationLog.js';
import { validateSubmit } from '../../contracts/validation.js';
import { resolveUsableContextLength } from '../../engine/index.js';
import type { AppendGroups } from '../../infra/db/appendGroups.js';
import { getCompaction } from '../../infra/db/compactions.js';
import {
  createConversation,
  getConversation,
  getConversationStatus,
  waitApplied,
} from '../../infra/db/conversations.js';
import { openNotification } from '../../infra/db/quietBatches.js';
import type { ConversationRow, Database } from '../../infra/db/schema.js';
import { ConversationNotFoundError } from '../../infra/db/storeErrors.js';
import type { TurnTextListener } from '../../infra/db/turnText.js';
import { newSessionId } from '../../workflows/ids.js';
import { type AppendDecideOptions, type AppendMetrics, appendAndDecide, gatewayAppendGroups } from './batchAppend.js';
import { type ChatRequest, type ChatTurnReply, ChatTurns, type TurnMetrics } from './chatTurns.js';
import { turnProvider } from './directTurn.js';
import { InvalidRequestError } from './errors.js';
import { type PublishedStatus, statusOf, storedBatchOf, turnIdOf } from './logView.js';
import { PendingWrites } from './pendingWrites.js';
import { type StartingRulesBase, startingRules, startingRulesHold } from './startingRules.js';
import type { TurnWaits } from './turnWaits.js';

export interface ConversationStart {
  model: string;
  provider?: string | null;
  contextLength?: number | null;
  source?: string;
  title?: string | null;
  /** The session a branch comes from (a drop-in client's history that diverged from the stored one). */
  parentSessionId?: string | null;
  /** Workflow knobs (tests, operations). */
  timeouts?: ConversationInput['timeouts'];
  gapWaitMs?: number;
}

/** `baseConfig`: the deployment's compression configuration, for a new conversation's rules (startingRules.ts). */
export interface ConversationsOptions extends StartingRulesBase {
  /** How long `sync` (wait: true, prepared context) waits for the workflow before answering unavailable. */
  waitTimeoutMs?: number;
  /**
   * Why the agent turn cannot run with this provider (chatProviderProblem of infra/llm), or null: asked of the
   * provider a conversation's turn would run with now (`turnProvider`), not the one it was created with.
   */
  chatProblem?: (provider: string | null) => string | null;
  /**
   * Notify the workflow of every batch, quiet or not (the behaviour before quiet batches): for tests of the
   * notification path itself and for debugging with every batch in the workflow's history.
   */
  notifyEveryBatch?: boolean;
  /** The pool reads use (status, waits): its own connections, never queued behind writes. Default: the write pool. */
  readDb?: Kysely<Database>;
  /**
   * The providers (as the worker's respond activity has them): with them, a chat turn whose batch decides nothing
   * runs in the gateway (chatTurns.ts). Without: the workflow runs every turn.
   */
  turns?: Omit<RespondDeps, 'db'>;
  /** How long a turn waits for the workflow's next rules (chatTurns.ts TurnWaits; tests lengthen them). */
  turnWaits?: TurnWaits;
  /** Where chat turns ran and how long they waited for rules (the process's /metrics). */
  turnMetrics?: TurnMetrics;
  /** Hears the text of streamed turns the workflow runs (infra/db/turnText.ts); without it, it comes once stored. */
  turnText?: TurnTextListener;
  /**
   * The write pool's size (unset: not known, only the cores count): plain batches that arrive while as many appends
   * run as it allows (infra/db/appendGroups.ts `defaultSlots`) are committed together, each under its own tenant.
   */
  writeConnections?: number;
  /** Batches per append transaction and groups rolled back (the process's /metrics). */
  appendMetrics?: AppendMetrics;
}

/** SPEC §4.1, §4.3, §4.4: refuse an unknown -900k id or a window below 64,000 before anything starts. */
export function validateModelChoice(start: Pick<ConversationStart, 'model' | 'provider' | 'contextLength'>): void {
  try {
    resolveUsableContextLength(start.model, start.provider ?? null, start.contextLength ?? null);
  } catch (err) {
    throw new InvalidRequestError((err as Error).message);
  }
}

function inputOf(tenantId: string, row: ConversationRow, start?: ConversationStart): ConversationInput {
  return {
    tenantId,
    conversationId: row.id,
    model: row.model,
    provider: row.provider,
    contextLength: row.context_length,
    source: row.source,
    title: row.title,
    ...(start?.timeouts ? { timeouts: start.timeouts } : {}),
    ...(start?.gapWaitMs !== undefined ? { gapWaitMs: start.gapWaitMs } : {}),
  };
}

export class Conversations {
  readonly waitTimeoutMs: number;
  /** Workflow knobs remembered per conversation from its creation (tests pass them with `create`/`submit`). */
  private readonly knobs = new Map<string, ConversationStart>();
  private readonly turns: ChatTurns;
  /** What the gateway still writes after it answered (pendingWrites.ts): later requests wait for it. */
  readonly pendingWrites = new PendingWrites();
  /** Plain batches' appends: grouped (tenants mixed) while every write slot is busy. */
  private readonly groups: AppendGroups;

  constructor(
    readonly db: Kysely<Database>,
    readonly temporal: ConversationClient,
    private readonly options: ConversationsOptions = {},
  ) {
    this.waitTimeoutMs = options.waitTimeoutMs ?? 30_000;
    this.groups = gatewayAppendGroups(db, options.writeConnections, options.appendMetrics);
    this.turns = new ChatTurns(this, options.turns ? createTurnRunner({ ...options.turns, db }) : null, {
      ...(options.turnWaits ? { waits: options.turnWaits } : {}),
      ...(options.turnMetrics ? { metrics: options.turnMetrics } : {}),
      ...(options.turnText ? { relay: options.turnText } : {}),
    });
  }

  get readDb(): Kysely<Database> {
    return this.options.readDb ?? this.db;
  }

  chatProblem(row: ConversationRow): string | null {
    return this.options.chatProblem?.(turnProvider(row)) ?? null;
  }

  /** Tells the workflow of a committed batch (the conversation's row as its append locked it). */
  notify(tenantId: string, row: ConversationRow, batch: StoredBatch): Promise<void> {
    return this.temporal.notify(inputOf(tenantId, row, this.knobsOf(tenantId, row.id)), batch);
  }

  /** Tells the workflow of a client compaction committed to the conversation (the row as the commit wrote it). */
  clientCompacted(tenantId: string, row: ConversationRow, compaction: ClientCompaction): Promise<void> {
    return this.temporal.clientCompacted(inputOf(tenantId, row, this.knobsOf(tenantId, row.id)), compaction);
  }

  async require(tenantId: string, conversationId: string): Promise<ConversationRow> {
    const row = await getConversation(this.readDb, tenantId, conversationId);
    if (!row) throw new ConversationNotFoundError(conversationId);
    return row;
  }

  /** Creates the conversation (PostgreSQL) and starts its workflow; idempotent for a given id. */
  async create(tenantId: string, conversationId: string, start: ConversationStart): Promise<ConversationRow> {
    validateModelChoice(start);
    const quietRules = await startingRules(this.db, this.options, tenantId, start);
    const { conversation } = await createConversation(this.db, tenantId, {
      quietRules,
      id: conversationId,
      sessionId: newSessionId(Date.now(), randomBytes(3).toString('hex')),
      model: start.model,
      provider: start.provider ?? null,
      contextLength: start.contextLength ?? null,
      source: start.source ?? 'api',
      title: start.title ?? null,
      parentSessionId: start.parentSessionId ?? null,
    });
    if (start.timeouts || start.gapWaitMs !== undefined) this.knobs.set(`${tenantId}\n${conversationId}`, start);
    // With starting rules the workflow starts with the first decision due (its notification starts it) or the
    // first request that needs it (ensureWorkflow); without them, now.
    if (!quietRules) await this.temporal.start(inputOf(tenantId, conversation, start));
    return conversation;
  }

  /** Starts the conversation's workflow unless it has published already (idempotent: an existing one is kept). */
  async ensureWorkflow(tenantId: string, row: ConversationRow): Promise<void> {
    if (row.state !== null) return;
    await this.temporal.start(inputOf(tenantId, row, this.knobsOf(tenantId, row.id)));
  }

  /**
   * Commits the batch (202 material: accepted = stored), then notifies the workflow. With `start`, a conversation
   * that does not exist yet is created first. A notification that cannot be sent leaves the batch stored: the error
   * says to retry with the same idempotency keys (a no-op that notifies again).
   */
  async submit(
    tenantId: string,
    conversationId: string,
    batch: SubmitMessages,
    start?: ConversationStart,
  ): Promise<StoredBatch> {
    return (await this.submitDecided(tenantId, conversationId, batch, start)).stored;
  }

  /**
   * `submit`; `decided`: this batch and every one before it are decided on (quiet), so nothing is due. `options`:
   * `absent` — the caller found no such conversation (it is created without looking again; creation is idempotent);
   * `after` — the key of the message the batch must follow (else it stores nothing: `stale`, `stored.seq` null).
   */
  async submitDecided(
    tenantId: string,
    conversationId: string,
    batch: SubmitMessages,
    start?: ConversationStart,
    options: { absent?: boolean; after?: string } = {},
  ): Promise<{ stored: StoredBatch; head: ConversationRow; decided: boolean; stale: boolean }> {
    const problem = validateSubmit(batch);
    if (problem) throw new InvalidRequestError(problem);
    if (start && (options.absent === true || !(await getConversation(this.db, tenantId, conversationId)))) {
      await this.create(tenantId, conversationId, start);
    }
    const after = options.after !== undefined ? { after: options.after } : {};
    const { stored, head, decision, stale } = await this.append(tenantId, conversationId, batch, after);
    if (decision.notify) {
      const notified = decision.notification ? { ...stored, notification: decision.notification } : stored;
      await this.temporal.notify(inputOf(tenantId, head, this.knobsOf(tenantId, conversationId, start)), notified);
    }
    return { stored, head, decided: !decision.notify && head.applied_seq >= head.batch_seq, stale };
  }

  /** Commits a batch and decides on it in the same transaction (batchAppend.ts). */
  append(tenantId: string, conversationId: string, batch: SubmitMessages, options: AppendDecideOptions = {}) {
    const loud = options.loud === true || this.options.notifyEveryBatch === true;
    return appendAndDecide(this.db, tenantId, conversationId, batch, { ...options, loud, groups: this.groups });
  }

  private knobsOf(tenantId: string, conversationId: string, start?: ConversationStart) {
    return start ?? this.knobs.get(`${tenantId}\n${conversationId}`);
  }

  /** The published status, from PostgreSQL (never the worker). */
  async status(tenantId: string, conversationId: string): Promise<PublishedStatus> {
    const row = await getConversationStatus(this.readDb, tenantId, conversationId);
    if (!row) throw new ConversationNotFoundError(conversationId);
    return statusOf(tenantId, row);
  }

  /**
   * Waits, bounded, until the workflow has decided on every batch accepted before this call; the status then.
   * TemporalUnavailableError when it does not happen in time (the worker is down or behind).
   */
  async sync(tenantId: string, conversationId: string, timeoutMs = this.waitTimeoutMs): Promise<PublishedStatus> {
    const row = await this.require(tenantId, conversationId);
    await this.ensureWorkflow(tenantId, row);
    const applied = await waitApplied(this.readDb, tenantId, conversationId, row.batch_seq, {
      timeoutMs,
    });
    if (!applied || applied.state === null) {
      throw new TemporalUnavailableError(
        `the conversation's worker has not processed the accepted messages within ${Math.round(timeoutMs / 1000)} s ` +
          '(the messages are stored; retry shortly)',
        Math.max(1, Math.ceil(timeoutMs / 10_000)),
      );
    }
    return statusOf(tenantId, applied);
  }

  /**
   * `sync` for a read (GET …/context): a conversation whose workflow never started, every batch decided at commit
   * by starting rules that are still the tenant's, has nothing due, so the read answers from PostgreSQL without
   * starting a workflow (issue #11 §3: reads never write to Temporal history).
   */
  async syncForRead(tenantId: string, conversationId: string): Promise<PublishedStatus> {
    const row = await this.require(tenantId, conversationId);
    if (
      row.state === null &&
      row.applied_seq >= row.batch_seq &&
      (await startingRulesHold(this.db, this.options, tenantId, row))
    ) {
      return statusOf(tenantId, row);
    }
    return this.sync(tenantId, conversationId);
  }

  /**
   * Like `sync`, and further waits, bounded, until no automatic compaction runs in the background (SPEC §19
   * `background`): the status then reflects its outcome.
   */
  async settled(tenantId: string, conversationId: string, timeoutMs = this.waitTimeoutMs): Promise<PublishedStatus> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const status = await this.sync(tenantId, conversationId, Math.max(1, deadline - Date.now()));
      if (!status.compacting) return status;
      if (Date.now() >= deadline) {
        throw new TemporalUnavailableError(
          `the conversation's background compaction has not finished within ${Math.round(timeoutMs / 1000)} s`,
          Math.max(1, Math.ceil(timeoutMs / 10_000)),
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * Chat backend mode: refuses at once when no provider can answer (nothing stored); otherwise stores the batch,
   * runs the turn (idempotent by turn id: a retried request returns the first reply, without a second model call)
   * and returns the stored reply (chatTurns.ts).
   */
  chatTurn(tenantId: string, conversationId: string, request: ChatRequest): Promise<ChatTurnReply> {
    return this.turns.chatTurn(tenantId, conversationId, request);
  }

  /** A manual compaction; the summary text of its stats comes from the store (it never travels through Temporal). */
  async compact(tenantId: string, conversationId: string, request: CompactRequest = {}): Promise<CompactionResult> {
    const { notification, head } = await openNotification(this.db, tenantId, conversationId);
    await this.ensureWorkflow(tenantId, head);
    const result = await this.temporal.compact(tenantId, conversationId, { ...request, notification });
    if (!result.stats || result.stats.summary !== null) return result;
    const stored = (await getCompaction(this.db, tenantId, result.compactionId))?.stats as { summary?: unknown } | null;
    const summary = typeof stored?.summary === 'string' ? stored.summary : null;
    return { ...result, stats: { ...result.stats, summary } };
  }

  async switchModel(
    tenantId: string,
    conversationId: string,
    request: SwitchModelRequest,
  ): Promise<ConversationStatus> {
    const { notification, head } = await openNotification(this.db, tenantId, conversationId);
    await this.ensureWorkflow(tenantId, head);
    return this.temporal.switchModel(tenantId, conversationId, { ...request, notification });
  }

  /** Replays a compaction (SPEC §13.7); the new summary comes from the store, never through Temporal. */
  async replayCompaction(tenantId: string, compactionId: string): Promise<ReplayResult> {
    const result = await this.temporal.replayCompaction(tenantId, compactionId);
    if (result.status === 'failed' || result.summaryBody !== null) return result;
    const record = await getCompaction(this.db, tenantId, compactionId);
    const note = (record?.stats as { replay?: { summaryBody?: unknown } } | null)?.replay;
    return { ...result, summaryBody: typeof note?.summaryBody === 'string' ? note.summaryBody : null };
  }
}

export { type ChatTurnReply, type PublishedStatus, storedBatchOf, turnIdOf };
