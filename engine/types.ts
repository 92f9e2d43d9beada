// Public message and engine types (SPEC §1.2, §17). Pure type declarations, shared by every engine module.

export type Role = 'system' | 'user' | 'assistant' | 'tool';
export interface CacheControl {
  type: 'ephemeral';
  ttl?: '1h';
}
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}
export type ContentPart =
  | { type: 'text'; text: string; cache_control?: CacheControl }
  | { type: 'image_url'; image_url: { url: string }; cache_control?: CacheControl };
/** OpenAI chat wire shape. Extra runtime properties are carried along unchanged (SPEC §1.2). */
export interface ChatMessage {
  role: Role;
  content: string | ContentPart[] | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  cache_control?: CacheControl;
}

export interface SummaryRequest {
  prompt: string;
  budgetTokens: number;
  previousSummary: string | null;
  focusTopic?: string;
  turnCount: number;
  /** Aborts when the caller gives up on the summary (its activity was cancelled, e.g. its worker is stopping). */
  signal?: AbortSignal;
}
/** Sends the summary prompt to an LLM; rejects on failure (SPEC §8.5.6, §9.2). */
export type Summarizer = (request: SummaryRequest) => Promise<string>;

export interface CompressionStats {
  tokensBefore: number;
  tokensAfter: number;
  prunedCount: number;
  droppedCount: number;
  fallbackUsed: boolean;
  aborted: boolean;
  noop: false | string;
  summary: string | null;
}

export interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

/** One chat turn's usage as the provider reported it, with its cache economics (SPEC §12.3 telemetry). */
export interface TurnUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  uncached_input_tokens: number;
}

export interface EngineStatus {
  last_prompt_tokens: number;
  threshold_tokens: number;
  context_length: number;
  usage_percent: number;
  compression_count: number;
}

export interface CompressOptions {
  currentTokens?: number;
  focusTopic?: string;
  force?: boolean;
}

export interface ContextEngine {
  readonly name: string;
  updateFromResponse(usage: Usage): void;
  shouldCompress(promptTokens?: number): boolean;
  compress(messages: readonly ChatMessage[], options?: CompressOptions): Promise<ChatMessage[]>;
  updateModel(model: string, contextLength: number, provider?: string): void;
  getStatus(): EngineStatus;
}
