// SPEC §19 `rehydrate_pinned`: messages an operator pinned that a compaction summarised are put back right after the
// summary, in their original order, so the model keeps reading them word for word. Only messages that stand alone
// come back — user and assistant text without tool calls: a tool call or a tool result re-injected without its
// partner would break the call/result pairing (SPEC §8.7). Pure.
import type { ChatMessage } from './types.js';

/** Which messages of the summarised window [headEnd, cut) come back: pinned, standalone, in window order. */
export function pinnedToRehydrate(
  input: readonly ChatMessage[],
  pinned: readonly boolean[],
  window: { headEnd: number; cut: number },
): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (let i = window.headEnd; i < window.cut; i++) {
    const message = input[i];
    if (!message || pinned[i] !== true) continue;
    if (message.role !== 'user' && message.role !== 'assistant') continue;
    if ((message.tool_calls?.length ?? 0) > 0) continue;
    out.push(message);
  }
  return out;
}

/** The reassembled output with `messages` inserted right after the summary row at `summaryIndex`. */
export function insertAfterSummary(
  output: readonly ChatMessage[],
  summaryIndex: number,
  messages: readonly ChatMessage[],
): ChatMessage[] {
  if (messages.length === 0 || summaryIndex < 0) return output.slice();
  return [...output.slice(0, summaryIndex + 1), ...messages, ...output.slice(summaryIndex + 1)];
}
