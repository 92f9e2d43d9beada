// After a drop-in client's own compaction (issue #12 "Client-side compaction is recognised"): the shorter history
// it sends next, carrying the summary it got, becomes a new session of the same conversation — committed
// (infra/db/clientCompaction.ts), then the workflow is told. A notification Temporal did not take (an outage
// between the commit and the signal: the request answered 503) is sent again by the next request of the
// conversation, which finds the workflow's published session behind the rotation's; the workflow adopts a client
// compaction once (workflows/conversation/clientCompaction.ts).
import { randomBytes } from 'node:crypto';
import { estimateMessagesTokensRough } from '../../../engine/tokens.js';
import type { ChatMessage } from '../../../engine/types.js';
import {
  clientRotationInto,
  commitClientRotation,
  pendingClientCompaction,
  recentClientCompactions,
} from '../../../infra/db/clientCompaction.js';
import type { ConversationRow } from '../../../infra/db/schema.js';
import { newSessionId } from '../../../workflows/ids.js';
import type { Conversations } from '../conversations.js';
import { summaryPosition } from './clientCompaction.js';

/**
 * How long a summary must be to lead a history that opens otherwise to the conversation it compacted: long enough
 * that no other history carries it by chance.
 */
export const MIN_CARRIED_SUMMARY = 64;

/**
 * For a history whose own conversation is new: the conversation whose client compaction (pending, or committed into
 * its current session) has the summary the history carries, or null. A client whose history opens otherwise after
 * its own compaction (Claude Code: the summary in a new first message, its system prompt changed) continues there,
 * from the summary request on, as one that keeps its opening (Codex CLI) does.
 */
export async function conversationCarrying(
  conversations: Conversations,
  tenantId: string,
  history: readonly ChatMessage[],
): Promise<string | null> {
  const compactions = await recentClientCompactions(conversations.readDb, tenantId);
  const carried = compactions.find((c) => summaryPosition(history, 0, c.summary, MIN_CARRIED_SUMMARY) >= 0);
  return carried?.conversationId ?? null;
}

/** Where a diverging history goes when it continues after the client's own compaction. */
export type Divergence = { kind: 'branch' } | { kind: 'rotate'; compactionId: string };

/**
 * How a history that diverges at `at` goes on: after the client's own compaction (its summary in the history), a
 * new session of the same conversation; otherwise a branch.
 */
export async function divergenceOf(
  conversations: Conversations,
  tenantId: string,
  conversationId: string,
  history: readonly ChatMessage[],
  at: number,
): Promise<Divergence> {
  const pending = await pendingClientCompaction(conversations.readDb, tenantId, conversationId);
  if (pending && summaryPosition(history, at, pending.summary) >= 0) {
    return { kind: 'rotate', compactionId: pending.id };
  }
  return { kind: 'branch' };
}

/** Tells the workflow that the client compaction `compactionId` started session `sessionId` (`head`: the row then). */
function tell(
  conversations: Conversations,
  tenantId: string,
  head: ConversationRow,
  compaction: { compactionId: string; sessionId: string },
): Promise<void> {
  return conversations.clientCompacted(tenantId, head, {
    ...compaction,
    version: head.version,
    activeMessages: head.active_messages,
    activeTokens: head.active_tokens,
  });
}

/**
 * Commits the pending client compaction `compactionId` of the conversation as its new session (the history is its
 * transcript from now on) and tells the workflow. False when another request committed it first.
 */
export async function rotate(
  conversations: Conversations,
  tenantId: string,
  conversationId: string,
  compactionId: string,
  history: readonly ChatMessage[],
): Promise<boolean> {
  const rotation = await commitClientRotation(conversations.db, tenantId, {
    conversationId,
    compactionId,
    newSessionId: newSessionId(Date.now(), randomBytes(16).toString('hex')),
    tokensAfter: estimateMessagesTokensRough(history),
  });
  if (!rotation) return false;
  await tell(conversations, tenantId, rotation.head, { compactionId, sessionId: rotation.sessionId });
  return true;
}

/**
 * Tells the workflow again of the client compaction that started the conversation's current session `sessionId`,
 * if one did (the caller found the published session behind it): before anything of the request is stored, so that
 * the workflow hears of the rotation before the batches that follow it.
 */
export async function retellRotation(
  conversations: Conversations,
  tenantId: string,
  conversationId: string,
  sessionId: string,
): Promise<void> {
  const found = await clientRotationInto(conversations.readDb, tenantId, conversationId, sessionId);
  if (found) await tell(conversations, tenantId, found.head, { compactionId: found.compactionId, sessionId });
}
