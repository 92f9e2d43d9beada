// Shapes shared by the provider adapters (DESIGN.md §5). Messages are the engine's OpenAI-shaped `ChatMessage`
// (SPEC §1.2); tools use the OpenAI function-tool shape and are converted for Anthropic.
import type { ChatTool, TurnUsage } from '../../contracts/conversation.js';
import type { ChatMessage } from '../../engine/types.js';

export type { ChatTool };

/**
 * Why the model stopped, in OpenAI's vocabulary: Anthropic's `end_turn`/`stop_sequence` → `stop`, `max_tokens` and
 * `model_context_window_exceeded` → `length`, `tool_use` → `tool_calls`, `refusal` → `refusal`. Anything else is
 * passed through as reported.
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'refusal' | (string & {});

/** Token usage of one call (contracts/conversation.ts TurnUsage). */
export type ChatUsage = TurnUsage;

export interface ChatResult {
  /** The assistant reply: `content` (string, `null` when the reply is only tool calls) and `tool_calls`. */
  message: ChatMessage;
  finishReason: FinishReason;
  /** The provider's own stop reason (`finish_reason` / `stop_reason`), null when absent. */
  rawFinishReason: string | null;
  /** OpenAI `message.refusal`; null otherwise (an Anthropic refusal shows as finishReason `refusal`). */
  refusal: string | null;
  usage: ChatUsage;
  /** The model id that was sent (after stripping a `-900k` alias, SPEC §4.3). */
  model: string;
  /** Whether cache markers were placed (SPEC §12.1). */
  cachingEnabled: boolean;
  /** Responses API: the reply's `compaction` output items (SPEC §15.1 native checkpoint), as returned. */
  compactionItems?: Array<Record<string, unknown>>;
  /** Responses API: the server refused `context_management`; the reply is the retry's without it (SPEC §15.1). */
  nativeRejected?: boolean;
}
