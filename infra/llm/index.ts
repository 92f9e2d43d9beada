// The LLM provider adapters (DESIGN.md §5): configuration, SDK clients, one chat call, error classification,
// Anthropic message conversion and the compaction summarizer (SPEC §2.3, §9.2, §12).
export * from './anthropicMessages.js';
export * from './chat.js';
export * from './clients.js';
export * from './errors.js';
export * from './fromAnthropic.js';
export * from './openaiMessages.js';
export * from './providers.js';
export * from './summarizer.js';
export * from './types.js';
