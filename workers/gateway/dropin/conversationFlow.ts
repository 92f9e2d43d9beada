// One drop-in request's way through the conversation log (issue #12), whatever its dialect: the history (as stored
// messages) is matched against the conversation it belongs to (history.ts), its new suffix is stored — committed
// before the provider is called — and every decision due for it is taken (at commit when the batches are quiet,
// else by the workflow, waited for: the hygiene pre-step of SPEC §11 included). The dialect then sends the provider
// the client's own request while the conversation was never compacted, or the compacted transcript this returns,
// and hands back the reply with its usage, stored after the history (or, for a history that is a strict prefix of
// the stored one, as the branch a later request will find).
import type { IncomingMessage } from '../../../contracts/conversation.js';
import { CONVERSATION_ID_PATTERN } from '../../../contracts/http/conversations.js';
import { MAX_BATCH_MESSAGES } from '../../../contracts/validation.js';
import type { ChatMessage, Usage } from '../../../engine/types.js';
import { storedHistoryKeys } from '../../../infra/db/historyKeys.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { MAX_LINEAGE_HOPS } from '../../../infra/db/sessions.js';
import type { Conversations } from '../conversations.js';
import { InvalidRequestError } from '../errors.js';
import { branchConversationId, derivedConversationId, historyKey, historyKeys, matchHistory } from './history.js';

/** A request refused before anything is stored, naming the request field (the dialect's `param`). */
export class DropinRequestError extends InvalidRequestError {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

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
  /** Stores the reply with the provider's usage; resolves to the conversation that holds it. */
  store(reply: ChatMessage, usage: Usage | undefined): Promise<string>;
}

/** Where a request's reply goes. */
interface Target {
  conversationId: string;
  /** The conversation is stored already (else the first append creates it). */
  exists: boolean;
  /** The history is a strict prefix of what is stored: the reply starts a branch (`branchFrom`'s session). */
  branchFrom: { sessionId: string } | null;
  /** The conversation is new: created as a branch of this session, or from nothing. */
  parentSessionId: string | null;
  /** Index of the first message of the history to store. */
  from: number;
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
  ) {}

  async begin(
    tenantId: string,
    history: readonly ChatMessage[],
    header: string | undefined,
    start: DropinStart,
  ): Promise<DropinTurn> {
    const keys = historyKeys(this.dialect, history);
    const target = await this.target(tenantId, history, keys, header);
    const store = (reply: ChatMessage, usage: Usage | undefined) =>
      this.storeReply(tenantId, target, history, keys, reply, usage, start);
    if (target.branchFrom) return { conversationId: null, compacted: null, store };
    const { conversations } = this;
    const items: IncomingMessage[] = history
      .slice(target.from)
      .map((message, i) => ({ message, idempotencyKey: keys[target.from + i] as string }));
    let decided: { compactions: number; sessionId: string } | null = null;
    for (const [i, batch] of batchesOf(items).entries()) {
      const creates = !target.exists && i === 0;
      const submitted = await conversations.submitDecided(
        tenantId,
        target.conversationId,
        { messages: batch },
        creates ? { ...start, parentSessionId: target.parentSessionId } : undefined,
      );
      const { head } = submitted;
      decided = submitted.decided
        ? { compactions: head.state?.compressionCount ?? 0, sessionId: head.current_session_id }
        : null;
    }
    if (!decided) {
      const status = await conversations.syncForRead(tenantId, target.conversationId);
      decided = { compactions: status.compressionCount, sessionId: status.sessionId };
    }
    const compacted =
      decided.compactions > 0
        ? (await loadTranscript(conversations.readDb, tenantId, decided.sessionId)).map((r) => r.message)
        : null;
    return { conversationId: target.conversationId, compacted, store };
  }

  /**
   * The conversation the history belongs to: the named or derived one while the history extends what it stores;
   * where it diverges, the branch for the history up to the first differing message (followed as often as the
   * history diverged before, at most MAX_LINEAGE_HOPS times).
   */
  private async target(
    tenantId: string,
    history: readonly ChatMessage[],
    keys: readonly string[],
    header: string | undefined,
  ): Promise<Target> {
    if (header !== undefined && !new RegExp(CONVERSATION_ID_PATTERN).test(header)) {
      throw new DropinRequestError(
        `x-conversation-id must match ${CONVERSATION_ID_PATTERN} (letters, digits, _ . -; at most 128)`,
        'x-conversation-id',
      );
    }
    const db = this.conversations.readDb;
    let conversationId = header ?? derivedConversationId(this.dialect, tenantId, history);
    let parentSessionId: string | null = null;
    for (let hop = 0; hop <= MAX_LINEAGE_HOPS; hop++) {
      const { sessionId, present, stored } = await storedHistoryKeys(db, tenantId, conversationId, this.dialect, keys);
      if (sessionId === null) return { conversationId, exists: false, branchFrom: null, parentSessionId, from: 0 };
      const match = matchHistory(keys, present, stored);
      if (match.kind === 'extends') {
        return { conversationId, exists: true, branchFrom: null, parentSessionId: null, from: match.from };
      }
      if (match.kind === 'prefix') {
        return { conversationId, exists: true, branchFrom: { sessionId }, parentSessionId: null, from: 0 };
      }
      parentSessionId = sessionId;
      conversationId = branchConversationId(conversationId, history, match.at + 1);
    }
    throw new DropinRequestError(
      `the history diverges from the stored conversation more than ${MAX_LINEAGE_HOPS} times`,
      'messages',
    );
  }

  private async storeReply(
    tenantId: string,
    target: Target,
    history: readonly ChatMessage[],
    keys: readonly string[],
    reply: ChatMessage,
    usage: Usage | undefined,
    start: DropinStart,
  ): Promise<string> {
    const replyItem = { message: reply, idempotencyKey: historyKey(this.dialect, history.length, reply) };
    const withUsage = usage ? { usage } : {};
    if (!target.branchFrom) {
      await this.conversations.submit(tenantId, target.conversationId, { messages: [replyItem], ...withUsage });
      return target.conversationId;
    }
    // The branch a later request finds: it diverges from the stored history at the reply.
    const branch = branchConversationId(target.conversationId, [...history, reply], history.length + 1);
    const items = [...history.map((message, i) => ({ message, idempotencyKey: keys[i] as string })), replyItem];
    const batches = batchesOf(items);
    const branchStart = { ...start, parentSessionId: target.branchFrom.sessionId };
    for (const [i, batch] of batches.entries()) {
      const last = i === batches.length - 1;
      await this.conversations.submit(tenantId, branch, { messages: batch, ...(last ? withUsage : {}) }, branchStart);
    }
    return branch;
  }
}
