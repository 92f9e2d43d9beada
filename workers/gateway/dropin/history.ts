// A stateless client's history against the stored transcript (issue #12 "Conversation identity"): every message of
// a drop-in request gets an idempotency key from its position and a hash of its wire fields, so the store's
// per-conversation keys say which of them are stored already. The conversation is the one the client names
// (`x-conversation-id`) or one derived from the tenant and the opening of the history; a history that diverges from
// what is stored goes to a branch conversation (derived from the history up to the first message that differs,
// linked to the stored one by parent_session_id), and the stored one is never changed.
import type { ChatMessage, ContentPart } from '../../../engine/types.js';
import { digest, historyKey, undated, wireOf } from '../../../infra/db/historyKeys.js';

export { historyKey };

export function historyKeys(dialect: string, messages: readonly ChatMessage[]): string[] {
  return messages.map((message, i) => historyKey(dialect, i, message));
}

/** The longest conversation id (contracts/http/conversations.ts CONVERSATION_ID_PATTERN). */
const MAX_ID_LENGTH = 128;

/** The opening of a history: up to and with its first user message. */
function openingOf(messages: readonly ChatMessage[]): ChatMessage[] {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  return messages.slice(0, firstUser < 0 ? messages.length : firstUser + 1);
}

/**
 * A stable conversation id for a history without `x-conversation-id` (`id`): the tenant and the opening of the
 * history without its calendar dates, so every later request of the same conversation finds it again — also on
 * another day, when the client rewrote the date in its opening (Codex CLI does after its own compaction, pi on every
 * start). `dated`: the id the opening got before dates were set aside (a conversation created then keeps it), null
 * when the opening holds no date, so the id is the same.
 */
export function derivedConversationIds(
  dialect: string,
  tenantId: string,
  messages: readonly ChatMessage[],
): { id: string; dated: string | null } {
  const wire = openingOf(messages).map(wireOf);
  const plain = undated(wire);
  const idOf = (opening: unknown) => `${dialect}-${digest([tenantId, opening]).slice(0, 40)}`;
  const id = idOf(plain);
  return { id, dated: JSON.stringify(plain) === JSON.stringify(wire) ? null : idOf(wire) };
}

/**
 * A compacted transcript for the provider, each of its leading system messages with the client's text of now where
 * that is the stored text but for its calendar dates: the stored message keeps the day the conversation began (and
 * what a compaction added after it, SPEC §8.6.1's note), the model is told today's.
 */
export function withTodaysSystem(transcript: readonly ChatMessage[], history: readonly ChatMessage[]): ChatMessage[] {
  const out = [...transcript];
  for (let i = 0; i < out.length && out[i]?.role === 'system' && history[i]?.role === 'system'; i++) {
    const stored = out[i] as ChatMessage;
    const content = todaysContent(stored.content, (history[i] as ChatMessage).content);
    if (content !== null) out[i] = { ...stored, content };
  }
  return out;
}

/** What a part says (its text, or its image), for comparing contents. */
const said = (part: ContentPart) => (part.type === 'text' ? part.text : part.image_url.url);

/**
 * The stored content with its beginning as the client sent it now (a string, or text parts), when that beginning
 * differs from today's only in calendar dates; null when it does not (or does not differ at all).
 */
function todaysContent(stored: ChatMessage['content'], today: ChatMessage['content']): ChatMessage['content'] | null {
  if (typeof stored === 'string' && typeof today === 'string') {
    const then = stored.slice(0, today.length);
    return then !== today && undated(then) === undated(today) ? today + stored.slice(today.length) : null;
  }
  if (!Array.isArray(stored) || !Array.isArray(today) || today.length > stored.length) return null;
  const then = stored.slice(0, today.length).map(said);
  const now = today.map(said);
  if (JSON.stringify(then) === JSON.stringify(now)) return null;
  return JSON.stringify(undated(then)) === JSON.stringify(undated(now))
    ? [...today, ...stored.slice(today.length)]
    : null;
}

/** The branch of `conversationId` for a history whose first `upTo` messages (the last one differs) it holds. */
export function branchConversationId(conversationId: string, messages: readonly ChatMessage[], upTo: number): string {
  const suffix = `.b${digest(messages.slice(0, upTo).map(wireOf)).slice(0, 24)}`;
  return `${conversationId.slice(0, MAX_ID_LENGTH - suffix.length)}${suffix}`;
}

/** How a history stands against a conversation's stored keys. */
export type HistoryMatch =
  /** Every stored message of the dialect is the history's, in order: the rest (from `from`) is new. */
  | { kind: 'extends'; from: number }
  /** The history is a strict prefix of what is stored (a retried or regenerated request): its reply is a branch. */
  | { kind: 'prefix' }
  /** The message at `at` differs from the stored one there. */
  | { kind: 'diverges'; at: number };

/** `keys` of the history against the keys stored (`present`: those of them stored; `stored`: how many there are). */
export function matchHistory(keys: readonly string[], present: ReadonlySet<string>, stored: number): HistoryMatch {
  let i = 0;
  while (i < keys.length && present.has(keys[i] as string)) i++;
  if (i >= stored) return { kind: 'extends', from: i };
  if (i === keys.length) return { kind: 'prefix' };
  return { kind: 'diverges', at: i };
}
