// The engine's public API (SPEC §17) plus the helpers hosts build on (phase functions, state, registry).
// Pure and deterministic; importable from Temporal workflow code.
export * from './autoraiseNotice.js';
export * from './boundaries.js';
export * from './budgets.js';
export * from './cacheControl.js';
export * from './compressor.js';
export * from './compressorState.js';
export type { CacheTtl } from './config.js';
export * from './config.js';
export * from './constants.js';
export * from './engineRegistry.js';
export * from './fallbackSummary.js';
export * from './hygiene.js';
export * from './jsonTokens.js';
export * from './messages.js';
export * from './modelKeyMatch.js';
export * from './modelRegistry.js';
export * from './phases.js';
export * from './pruning.js';
export * from './reassembly.js';
export * from './sanitizer.js';
export * from './similarity.js';
export * from './summaryPrompt.js';
export * from './text.js';
export * from './thresholds.js';
export * from './tokens.js';
export * from './types.js';
