// OpenAI Responses input items ⇄ the store's messages (issue #12, the drop-in Responses endpoint). A client of the
// Responses API sends `instructions` and a list of input items; the store keeps the OpenAI chat shape of SPEC §1.2:
// - `instructions` → a system message; a plain string input → one user message;
// - a `message` item → a message of its role (`developer` → system), its text parts joined;
// - the assistant side of one turn — an assistant `message` and the `function_call` items after it — is ONE assistant
//   message (its text, its tool calls), so a reply stored from `response.output` and the same items echoed back by
//   the client are the same message;
// - a `function_call_output` → a tool message; `reasoning` items (and any other item kind) are not stored.
// The way back (a compacted transcript as input items) inverts this: system messages → `instructions`.
import type { ChatMessage, ToolCall } from '../../engine/types.js';

type Item = Record<string, unknown>;

/** The text of a message item's content: a string, or its text parts (input_text / output_text / text) joined. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (part && typeof (part as Item).text === 'string' ? ((part as Item).text as string) : ''))
    .join('');
}

function outputText(output: unknown): string {
  return typeof output === 'string' ? output : textOf(output);
}

/** Input items (or a response's output items) → stored messages; `instructions` first as a system message. */
export function fromResponsesInput(instructions: unknown, input: unknown): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (typeof instructions === 'string' && instructions !== '') out.push({ role: 'system', content: instructions });
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  /** The assistant message the current turn's assistant-side items go into. */
  let assistant: ChatMessage | null = null;
  for (const raw of Array.isArray(input) ? input : []) {
    const item = (raw ?? {}) as Item;
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    if (type === 'message' && item.role === 'assistant') {
      if (!assistant || assistant.tool_calls) {
        assistant = { role: 'assistant', content: null };
        out.push(assistant);
      }
      assistant.content = ((assistant.content as string | null) ?? '') + textOf(item.content);
    } else if (type === 'function_call') {
      if (!assistant) {
        assistant = { role: 'assistant', content: null };
        out.push(assistant);
      }
      const call: ToolCall = {
        id: String(item.call_id ?? item.id ?? ''),
        type: 'function',
        function: { name: String(item.name ?? ''), arguments: String(item.arguments ?? '') },
      };
      assistant.tool_calls = [...(assistant.tool_calls ?? []), call];
    } else if (type === 'function_call_output') {
      assistant = null;
      out.push({ role: 'tool', tool_call_id: String(item.call_id ?? ''), content: outputText(item.output) });
    } else if (type === 'message') {
      assistant = null;
      const role = item.role === 'developer' || item.role === 'system' ? 'system' : 'user';
      out.push({ role, content: textOf(item.content) });
    }
    // reasoning, compaction and other items: not stored (they travel as the client sent them while never compacted).
  }
  return out;
}

/** Stored messages → `instructions` and input items (a compacted transcript for the provider). */
export function toResponsesInput(messages: readonly ChatMessage[]): { instructions?: string; input: Item[] } {
  const system: string[] = [];
  const input: Item[] = [];
  const text = (content: ChatMessage['content']) =>
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content.map((part) => (part.type === 'text' ? part.text : '')).join('')
        : '';
  for (const message of messages) {
    if (message.role === 'system') {
      system.push(text(message.content));
    } else if (message.role === 'tool') {
      input.push({ type: 'function_call_output', call_id: message.tool_call_id, output: text(message.content) });
    } else if (message.role === 'assistant') {
      const said = text(message.content);
      if (said !== '')
        input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: said }] });
      for (const call of message.tool_calls ?? []) {
        input.push({
          type: 'function_call',
          call_id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
      }
    } else {
      input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: text(message.content) }] });
    }
  }
  return { ...(system.length > 0 ? { instructions: system.join('\n\n') } : {}), input };
}
