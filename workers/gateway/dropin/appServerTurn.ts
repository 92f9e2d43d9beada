// A drop-in request on a Codex app-server route (SPEC §15.2, issue #13 §2): the app-server lives in the worker and
// its thread owns the context, so the gateway does not call a provider. The history is matched as for any drop-in
// request (conversationFlow.ts `target`); what is new in it is the chat turn the workflow runs (stored first, then
// sent to the thread), and its reply is stored by the worker under the key the client's next history gives it, so
// that history matches again. A retried request (its history is the stored one minus the reply it got) is answered
// with that stored reply; any other earlier state of the conversation cannot be answered — a thread does not branch.
import type { IncomingMessage } from '../../../contracts/conversation.js';
import type { ChatMessage } from '../../../engine/types.js';
import { READ_ONLY, withTenant } from '../../../infra/db/tenant.js';
import { selectTurn } from '../../../infra/db/turns.js';
import type { ChatTurnReply } from '../chatTurns.js';
import type { Conversations } from '../conversations.js';
import { turnIdOf } from '../logView.js';
import { type DropinFlow, DropinRequestError, type Target } from './conversationFlow.js';

export interface AppServerTurnAnswer {
  conversationId: string;
  turn: ChatTurnReply;
}

/** The history's messages after its last assistant message, keyed as the dialect keys them. */
function trailing(history: readonly ChatMessage[], target: Target): IncomingMessage[] {
  let from = 0;
  history.forEach((message, i) => {
    if (message.role === 'assistant') from = i + 1;
  });
  return history.slice(from).map((message, i) => ({ message, idempotencyKey: target.keys[from + i] as string }));
}

export async function appServerTurn(
  flow: DropinFlow,
  conversations: Conversations,
  tenantId: string,
  history: readonly ChatMessage[],
  header: string | undefined,
  start: { model: string; provider: string },
): Promise<AppServerTurnAnswer> {
  const target = await flow.target(tenantId, history, header);
  const { conversationId } = target;
  let messages: IncomingMessage[];
  if (target.branchFrom) {
    messages = trailing(history, target);
    const turnId = turnIdOf(conversationId, messages);
    const stored = await withTenant(conversations.readDb, tenantId, (tx) => selectTurn(tx, turnId), READ_ONLY);
    if (stored?.messageId == null) {
      throw new DropinRequestError(
        'this history is an earlier state of the conversation, and a Codex app-server thread cannot branch',
        'messages',
      );
    }
  } else {
    messages = history
      .slice(target.from)
      .map((message, i) => ({ message, idempotencyKey: target.keys[target.from + i] as string }));
  }
  if (messages.length === 0 || messages.at(-1)?.message.role === 'assistant') {
    throw new DropinRequestError('the last message must be a new user message', 'messages');
  }
  if (!target.exists) {
    await conversations.create(tenantId, conversationId, {
      ...start,
      source: flow.source,
      parentSessionId: target.parentSessionId,
    });
  }
  const turn = await conversations.chatTurn(tenantId, conversationId, {
    messages,
    replyKey: { prefix: target.prefix, position: history.length },
  });
  return { conversationId, turn };
}
