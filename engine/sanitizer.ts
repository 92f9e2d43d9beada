// Tool-pair repair (SPEC §8.7): drop tool rows without a call, stub calls without a result.
import { ORPHAN_CALL_STUB } from './constants.js';
import { hasToolCalls } from './messages.js';
import type { ChatMessage, ToolCall } from './types.js';

function callId(call: ToolCall | null | undefined): string | null {
  return call !== null && typeof call === 'object' && typeof call.id === 'string' ? call.id : null;
}

function collectCallIds(messages: readonly ChatMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) {
    if (!hasToolCalls(m)) continue;
    for (const call of m.tool_calls as ToolCall[]) {
      const id = callId(call);
      if (id !== null) ids.add(id);
    }
  }
  return ids;
}

function answersKnownCall(message: ChatMessage, callIds: ReadonlySet<string>): boolean {
  return typeof message.tool_call_id === 'string' && callIds.has(message.tool_call_id);
}

function orphanStub(id: string): ChatMessage {
  return { role: 'tool', tool_call_id: id, content: ORPHAN_CALL_STUB };
}

/** Step 4: stubs for unanswered calls, in call order, right after their assistant (the last message is exempt). */
function appendWithStubs(output: ChatMessage[], message: ChatMessage, resultIds: Set<string>): void {
  output.push(message);
  for (const call of message.tool_calls as ToolCall[]) {
    const id = callId(call);
    if (id === null || resultIds.has(id)) continue;
    output.push(orphanStub(id));
    resultIds.add(id);
  }
}

/** §8.7. Pure; returns a new array; a list without orphans comes back deep-equal (same message objects). */
export function sanitizeToolPairs(messages: readonly ChatMessage[]): ChatMessage[] {
  const callIds = collectCallIds(messages);
  const kept = messages.filter((m) => m.role !== 'tool' || answersKnownCall(m, callIds));
  const resultIds = new Set<string>();
  for (const m of kept) if (m.role === 'tool') resultIds.add(m.tool_call_id as string);
  const output: ChatMessage[] = [];
  const last = kept.length - 1;
  for (let i = 0; i < kept.length; i++) {
    const m = kept[i] as ChatMessage;
    if (i !== last && hasToolCalls(m)) appendWithStubs(output, m, resultIds);
    else output.push(m);
  }
  return output;
}

/**
 * Ids of tool calls and results that do not form an adjacent pair: a call whose results do not follow its assistant
 * message directly (all of them, in any order) and a result that does not directly follow its call's message (or
 * answers none, or answers a call twice). The calls of the last assistant message may still wait for their results
 * (in flight), like §8.7's exemption. A result without an id counts as `#<index>`.
 */
export function unpairedToolIds(messages: readonly ChatMessage[]): Set<string> {
  const unpaired = new Set<string>();
  const seenCalls = new Set<string>();
  let i = 0;
  while (i < messages.length) {
    const m = messages[i] as ChatMessage;
    if (m.role === 'tool') {
      unpaired.add(typeof m.tool_call_id === 'string' ? m.tool_call_id : `#${i}`);
      i++;
      continue;
    }
    if (!hasToolCalls(m)) {
      i++;
      continue;
    }
    const open = new Set<string>();
    for (const call of m.tool_calls as ToolCall[]) {
      const id = callId(call);
      if (id === null) continue;
      if (seenCalls.has(id) || open.has(id)) unpaired.add(id);
      open.add(id);
      seenCalls.add(id);
    }
    let j = i + 1;
    for (; j < messages.length && (messages[j] as ChatMessage).role === 'tool'; j++) {
      const id = (messages[j] as ChatMessage).tool_call_id;
      if (typeof id === 'string' && open.delete(id)) continue;
      unpaired.add(typeof id === 'string' ? id : `#${j}`);
    }
    if (j < messages.length) for (const id of open) unpaired.add(id);
    i = j;
  }
  return unpaired;
}
