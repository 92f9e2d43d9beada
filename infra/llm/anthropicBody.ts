// The body of an Anthropic Messages request put together from each entry's JSON as first serialised (jsonBody.ts):
// a message's entry by its message object, a run of tool rows (one user message, anthropicMessages.ts rule 3) from
// each row's tool_result block, by row. The messages that carry this call's cache markers (SPEC §12.2) are copies
// made for it, so they are serialised afresh.
import type { ChatMessage } from '../../engine/types.js';
import { messageParam, requestUnits, toolResultBlock } from './anthropicMessages.js';
import { JsonByObject, jsonArray, objectWithArray } from './jsonBody.js';

const entryJson = new JsonByObject<ChatMessage>(messageParam);
const resultJson = new JsonByObject<ChatMessage>(toolResultBlock);
const USER_RESULTS = Buffer.from('{"role":"user","content":');
const CLOSE = Buffer.from('}');

/**
 * The UTF-8 body: byte for byte `JSON.stringify({ ...head, messages, ...tail })` where `messages` is
 * `toAnthropicRequest(messages).messages` (system messages hoisted; the caller puts `system` in `tail`).
 */
export function anthropicMessagesBody(
  head: Readonly<Record<string, unknown>>,
  messages: readonly ChatMessage[],
  tail: Readonly<Record<string, unknown>>,
): Buffer {
  const entries = requestUnits(messages).units.map((unit) =>
    'message' in unit
      ? entryJson.get(unit.message)
      : Buffer.concat([USER_RESULTS, ...jsonArray(unit.results.map((row) => resultJson.get(row))), CLOSE]),
  );
  return objectWithArray(head, 'messages', entries, tail);
}
