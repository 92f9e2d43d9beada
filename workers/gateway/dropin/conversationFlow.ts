// One drop-in request's way through the conversation log (issue #12), whatever its dialect: the history (as stored
// messages) is matched against the conversation it belongs to (historyTarget.ts), its new suffix is stored — committed
// before the provider is called — and every decision due for it is taken (at commit when the batches are quiet,
// else by the workflow, waited for: the hygiene pre-step of SPEC §11 included). The dialect then sends the provider
// the client's own request while the conversation was never compacted, or the compacted transcript this returns,
// and hands back the reply with its usage, stored after the history — committed while the client reads it, right
// after the history or not at all (the next request carries it again) — or, for a history that is a strict prefix
// of the stored one, as the branch a later request will find. A client's own compaction (clientCompaction.ts) goes
// to the provider as the client sent it, decides nothing and is recorded; the shorter history the client sends
// after it becomes a new session of the same conversation (clientRotation.ts), and the workflow is told.
import type { IncomingMessage } from '../../../contracts/conversation.js';
import { MAX_BATCH_MESSAGES } from '../../../contracts/validation.js';
import type { ChatMessage, Usage } from '../../../engine/types.js';
import { recordClientCompaction } from '../../../infra/db/clientCompaction.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import type { Conversations } from '../conversations.js';
import { isClientCompactionRequest, offersTools, textOf } from './clientCompaction.js';
import { retellRotation } from './clientRotation.js';
import { branchConversationId, historyKey, historyKeys, withTodaysSystem } from './history.js';
import { findTarget, type Target } from './historyTarget.js';
import { DropinRequestError } from './requestError.js';

export { DropinRequestError, type Target };

/** How a conversation the flow creates is started. */
export interface DropinStart {
  model: string;
  provider: string;
  source: string;
}

/** One request, its history stored and decided on. */
export interface DropinTurn {
  /** The conversation the reply goes to; null when that is a branch named by the reply itself. */
  conversationId: string | null;
  /** The conversation was compacted: its transcript, for the provider instead of the client's messages. */
  compacted: ChatMessage[] | null;
  /** With `compacted`: the stored row of each of its messages (a dialect finds a summary's row by it). */
  compactedRowIds?: number[];
  /**
   * Stores the reply with the provider's usage; resolves to the conversation that holds it. `nativeCheckpoint`: the
   * reply came with one (SPEC §15.1), so its reading is left out.
   */
  store(reply: ChatMessage, usage: Usage | undefined, options?: { nativeCheckpoint?: boolean }): Promise<string>;
  /**
   * SPEC §15.1 as the conversation's workflow published it: its `compact_threshold` (null: not opted in, or not
   * published yet) and the session the feature may be turned off on.
   */
  native: { compactThreshold: number | null; sessionId: string } | null;
  /** The request is the client's own compaction: passed through, its reply recorded as the client's summary. */
  clientCompaction: boolean;
}

/**
 * SPEC §15.1 threshold of a conversation as its row holds it: the workflow's status, else its rules (the starting
 * rules of a conversation the workflow has not published for yet carry it too).
 */
function nativeThresholdOfRow(row: ConversationRow): number | null {
  return row.state?.nativeCompactThreshold ?? row.quiet_rules?.nativeCompactThreshold ?? null;
}

/** The batches of `items` the store takes (at most MAX_BATCH_MESSAGES each). */
export function batchesOf<T>(items: readonly T[]): T[][] {
  const batches: T[][] = [];
  for (let i = 0; i < items.length; i += MAX_BATCH_MESSAGES) batches.push(items.slice(i, i + MAX_BATCH_MESSAGES));
  return batches;
}

export class DropinFlow {
  constructor(
    private readonly conversations: Conversations,
    /** The dialect's prefix of idempotency keys and derived conversation ids (`oa`, `an`). */
    private readonly dialect: string,
    /** The `source` of the conversations the dialect creates. */
    readonly source: string,
  ) {}

  /**
   * `request`: the model, the provider serving it, and the request's `tools` (a client's own compaction request
   * offers none); `compacts` when the dialect itself marks the request as the client's compaction (Anthropic's
   * `compaction` parameter).
   */
  async begin(
    tenantId: string,
    history: readonly ChatMessage[],
    header: string | undefined,
    request: { model: string; provider: string; tools: unknown; compacts?: boolean },
  ): Promise<DropinTurn> {
    const start: DropinStart = { model: request.model, provider: request.provider, source: this.source };
    let target = await this.target(tenantId, history, header);
    if (target.unheardRotation) {
      await retellRotation(this.conversations, tenantId, target.conversationId, target.unheardRotation);
    }
    const clientCompaction =
      request.compacts === true || isClientCompactionRequest(history, offersTools(request.tools));
    const first = target;
    if (clientCompaction) {
      // Passed through as the client sent it; stored with its reply after the call, without the reading (the
      // summary request measures the transcript the client is about to leave): it decides nothing.
      const store = (reply: ChatMessage) => this.storeClientCompaction(tenantId, first, history, reply, start);
      return { conversationId: first.conversationId, compacted: null, store, clientCompaction, native: null };
    }
    const storeIn =
      (matched: Target) => (reply: ChatMessage, usage: Usage | undefined, options?: { nativeCheckpoint?: boolean }) =>
        this.storeReply(tenantId, matched, history, reply, usage, start, options?.nativeCheckpoint === true);
    if (first.branchFrom) {
      return { conversationId: null, compacted: null, store: storeIn(first), clientCompaction, native: null };
    }
    // The new messages go right after the stored ones they follow: when another request stored something in
    // between (a concurrent request of another history), the history is matched again — once, then stored as
    // before (a conversation our own API wrote to as well has other keys last).
    let stored = await this.storeHistory(tenantId, first, history, start, { guarded: true });
    if (stored[0]?.stale) {
      target = await this.target(tenantId, history, header);
      if (target.branchFrom) {
        return { conversationId: null, compacted: null, store: storeIn(target), clientCompaction, native: null };
      }
      stored = await this.storeHistory(tenantId, target, history, start);
    }
    const store = storeIn(target);
    const { conversations } = this;
    let decided: { compactions: number; sessionId: string; nativeThreshold: number | null } | null = null;
    for (const submitted of stored) {
      const { head } = submitted;
      decided = submitted.decided
        ? {
            compactions: head.state?.compressionCount ?? 0,
            sessionId: head.current_session_id,
            nativeThreshold: nativeThresholdOfRow(head),
          }
        : null;
    }
    if (!decided) {
      const status = await conversations.syncForRead(tenantId, target.conversationId);
      const head = stored.at(-1)?.head;
      decided = {
        compactions: status.compressionCount,
        sessionId: status.sessionId,
        nativeThreshold: status.nativeCompactThreshold ?? (head ? nativeThresholdOfRow(head) : null),
      };
    }
    const rows = decided.compactions > 0 ? await this.compactedTranscript(tenantId, decided.sessionId) : null;
    const native = { compactThreshold: decided.nativeThreshold, sessionId: decided.sessionId };
    return {
      conversationId: target.conversationId,
      compacted: rows
        ? withTodaysSystem(
            rows.map((row) => row.message),
            history,
          )
        : null,
      ...(rows ? { compactedRowIds: rows.map((row) => row.id) } : {}),
      store,
      clientCompaction,
      native,
    };
  }

  /**
   * The session's transcript when a compaction of the server's shaped it (a row a compaction wrote); null when the
   * session holds the client's messages as sent (a session the client's own compaction started).
   */
  private async compactedTranscript(
    tenantId: string,
    sessionId: string,
  ): Promise<Array<{ id: number; message: ChatMessage }> | null> {
    const rows = await loadTranscript(this.conversations.readDb, tenantId, sessionId);
    return rows.some((row) => row.compactionId !== null) ? rows : null;
  }

  /**
   * Stores the history from `target.from` in batches (the first creates a new conversation); their outcomes.
   * `guarded`: the first batch only right after the stored message it follows (`stale` otherwise, nothing stored).
   */
  private async storeHistory(
    tenantId: string,
    target: Target,
    messages: readonly ChatMessage[],
    start: DropinStart,
    options: { extra?: IncomingMessage[]; guarded?: boolean } = {},
  ) {
    const { keys, from } = target;
    const items: IncomingMessage[] = [
      ...messages.slice(from).map((message, i) => ({ message, idempotencyKey: keys[from + i] as string })),
      ...(options.extra ?? []),
    ];
    const outcomes = [];
    for (const [i, batch] of batchesOf(items).entries()) {
      const creates = !target.exists && i === 0;
      const follows = options.guarded && i === 0 && target.exists && from > 0 ? keys[from - 1] : undefined;
      outcomes.push(
        await this.conversations.submitDecided(
          tenantId,
          target.conversationId,
          { messages: batch },
          creates ? { ...start, parentSessionId: target.parentSessionId } : undefined,
          { absent: creates, ...(follows !== undefined ? { after: follows } : {}) },
        ),
      );
      if (outcomes[0]?.stale) break;
    }
    return outcomes;
  }

  /** The client's compaction request and its summary, stored (no reading) and recorded as pending. */
  private async storeClientCompaction(
    tenantId: string,
    target: Target,
    history: readonly ChatMessage[],
    reply: ChatMessage,
    start: DropinStart,
  ): Promise<string> {
    const replyItem = { message: reply, idempotencyKey: historyKey(target.prefix, history.length, reply) };
    // A repeated request (its history is stored, with the summary it got before): the client goes on with the new
    // summary, which the record keeps; the transcript keeps the first.
    if (!target.branchFrom) await this.storeHistory(tenantId, target, history, start, { extra: [replyItem] });
    await recordClientCompaction(this.conversations.db, tenantId, {
      conversationId: target.conversationId,
      summary: textOf(reply),
    });
    return target.conversationId;
  }

  /** The conversation the history belongs to, and what of it to store (historyTarget.ts). */
  target(tenantId: string, history: readonly ChatMessage[], header: string | undefined): Promise<Target> {
    return findTarget(this.conversations, this.dialect, tenantId, history, header);
  }

  private async storeReply(
    tenantId: string,
    target: Target,
    history: readonly ChatMessage[],
    reply: ChatMessage,
    usage: Usage | undefined,
    start: DropinStart,
    nativeCheckpoint = false,
  ): Promise<string> {
    const replyItem = { message: reply, idempotencyKey: historyKey(target.prefix, history.length, reply) };
    const withUsage = nativeCheckpoint ? { nativeCheckpoint } : usage ? { usage } : {};
    if (!target.branchFrom) {
      // Committed while the client reads it (pendingWrites.ts): its next request waits for the commit here, or
      // carries the reply in its history anyway; on another gateway the reply lands only right after the history
      // it answers (`after`), else the next request's copy is the one kept.
      const after = history.length > 0 ? { after: target.keys[history.length - 1] as string } : {};
      const { conversationId } = target;
      this.conversations.pendingWrites.add(tenantId, conversationId, () =>
        this.conversations.submitDecided(
          tenantId,
          conversationId,
          { messages: [replyItem], ...withUsage },
          undefined,
          after,
        ),
      );
      return conversationId;
    }
    // The branch a later request finds: it diverges from the stored history at the reply.
    const branch = branchConversationId(target.conversationId, [...history, reply], history.length + 1);
    // A new conversation: keyed as every conversation before the client's own compaction.
    const branchKeys = historyKeys(this.dialect, [...history, reply]);
    const items = [...history, reply].map((message, i) => ({ message, idempotencyKey: branchKeys[i] as string }));
    const batches = batchesOf(items);
    const branchStart = { ...start, parentSessionId: target.branchFrom.sessionId };
    for (const [i, batch] of batches.entries()) {
      const last = i === batches.length - 1;
      await this.conversations.submit(tenantId, branch, { messages: batch, ...(last ? withUsage : {}) }, branchStart);
    }
    return branch;
  }
}
