// Every workflow the worker registers (its `workflowsPath`).
export { compactionWorkflow } from './compaction.js';
export { conversationWorkflow } from './conversation.js';
export { replayCompactionWorkflow } from './replay.js';
