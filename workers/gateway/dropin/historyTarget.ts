// Which conversation a drop-in history belongs to (issue #12; conversationFlow.ts stores it): the named or derived
// conversation while the history extends what it stores, a branch where it diverges, and — when the history carries
// the summary of the client's own pending compaction — that compaction committed and the conversation's new session.
// Reads the idempotency keys the dialect gave the stored messages (infra/db/historyKeys.ts), after the conversation's
// pending reply is committed.
import { CONVERSATION_ID_PATTERN } from '../../../contracts/http/conversations.js';
import type { ChatMessage } from '../../../engine/types.js';
import { storedHistoryKeys } from '../../../infra/db/historyKeys.js';
import { MAX_LINEAGE_HOPS } from '../../../infra/db/sessions.js';
import type { Conversations } from '../conversations.js';
import { conversationCarrying, divergenceOf, rotate } from './clientRotation.js';
import { branchConversationId, derivedConversationIds, historyKeys, matchHistory } from './history.js';
import { DropinRequestError } from './requestError.js';

/** Where a request's reply goes. */
export interface Target {
  conversationId: string;
  /** The conversation is stored already (else the first append creates it). */
  exists: boolean;
  /** The history is a strict prefix of what is stored: the reply starts a branch (`branchFrom`'s session). */
  branchFrom: { sessionId: string } | null;
  /** The conversation is new: created as a branch of this session, or from nothing. */
  parentSessionId: string | null;
  /** Index of the first message of the history to store. */
  from: number;
  /** The idempotency keys of the history in the conversation, and their prefix (keyPrefix). */
  keys: string[];
  prefix: string;
  /** The current session, when the client's own compaction started it and the workflow may not have heard. */
  unheardRotation: string | null;
}

/** The key prefix of a conversation's drop-in messages: the dialect's, and after a client compaction its floor. */
const keyPrefix = (dialect: string, floor: number) => (floor > 0 ? `${dialect}~${floor}` : dialect);

/**
 * The conversation the history belongs to: the named or derived one while the history extends what it stores;
 * where it diverges, the branch for the history up to the first differing message (followed as often as the
 * history diverged before, at most MAX_LINEAGE_HOPS times) — unless it carries the summary of the client's own
 * pending compaction: then that compaction is committed and the history starts the conversation's new session. A
 * history whose own conversation is new and that carries the summary of a client compaction of the tenant goes to
 * that compaction's conversation (clientRotation.ts conversationCarrying: a client whose opening changed with it).
 */
export async function findTarget(
  conversations: Conversations,
  dialect: string,
  tenantId: string,
  history: readonly ChatMessage[],
  header: string | undefined,
): Promise<Target> {
  if (header !== undefined && !new RegExp(CONVERSATION_ID_PATTERN).test(header)) {
    throw new DropinRequestError(
      `x-conversation-id must match ${CONVERSATION_ID_PATTERN} (letters, digits, _ . -; at most 128)`,
      'x-conversation-id',
    );
  }
  const db = conversations.readDb;
  // `dated`: a conversation created before derived ids set calendar dates aside keeps the id it was given then.
  const named = header === undefined ? derivedConversationIds(dialect, tenantId, history) : { id: header, dated: null };
  let conversationId = named.id;
  let dated = named.dated;
  let parentSessionId: string | null = null;
  let rotated = false;
  let prefix = dialect;
  let keys = historyKeys(prefix, history);
  for (let hop = 0, rekeyed = 0; hop <= MAX_LINEAGE_HOPS; hop++) {
    // The reply of this conversation's previous request may still be committing (storeReply).
    await conversations.pendingWrites.settled(tenantId, conversationId);
    let found = await storedHistoryKeys(db, tenantId, conversationId, prefix, keys);
    if (found.sessionId === null && dated !== null) {
      await conversations.pendingWrites.settled(tenantId, dated);
      const before = await storedHistoryKeys(db, tenantId, dated, prefix, keys);
      if (before.sessionId !== null) [conversationId, found] = [dated, before];
    }
    dated = null;
    if (found.sessionId === null && hop === 0 && header === undefined) {
      // A client whose history opens otherwise after its own compaction continues the conversation it compacted.
      const carrying = await conversationCarrying(conversations, tenantId, history);
      if (carrying !== null) {
        await conversations.pendingWrites.settled(tenantId, carrying);
        conversationId = carrying;
        found = await storedHistoryKeys(db, tenantId, carrying, prefix, keys);
      }
    }
    const { sessionId, present, stored } = found;
    const wanted = keyPrefix(dialect, found.floor);
    if (wanted !== prefix && rekeyed++ < 2) {
      // After the client's own compaction the history is keyed anew: its messages start the new session.
      prefix = wanted;
      keys = historyKeys(prefix, history);
      hop -= 1;
      continue;
    }
    // The client compacted the conversation before and the workflow published another session than this one.
    const unheardRotation =
      !rotated && found.floor > 0 && sessionId !== null && found.publishedSessionId !== sessionId ? sessionId : null;
    const keyed = { keys, prefix, unheardRotation };
    if (sessionId === null) {
      return { conversationId, exists: false, branchFrom: null, parentSessionId, from: 0, ...keyed };
    }
    const match = matchHistory(keys, present, stored);
    if (match.kind === 'extends') {
      return { conversationId, exists: true, branchFrom: null, parentSessionId: null, from: match.from, ...keyed };
    }
    if (match.kind === 'prefix') {
      return { conversationId, exists: true, branchFrom: { sessionId }, parentSessionId: null, from: 0, ...keyed };
    }
    const divergence = rotated ? null : await divergenceOf(conversations, tenantId, conversationId, history, match.at);
    if (divergence?.kind === 'rotate') {
      // Committed here (or by a concurrent request of the same history): matched again, in the new session.
      await rotate(conversations, tenantId, conversationId, divergence.compactionId, history);
      rotated = true;
      hop -= 1;
      continue;
    }
    parentSessionId = sessionId;
    conversationId = branchConversationId(conversationId, history, match.at + 1);
    prefix = dialect;
    keys = historyKeys(prefix, history);
  }
  throw new DropinRequestError(
    `the history diverges from the stored conversation more than ${MAX_LINEAGE_HOPS} times`,
    'messages',
  );
}
