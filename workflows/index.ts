// Every workflow the worker registers (its `workflowsPath`).
export { compactionWorkflow } from './compaction.js';
export { conversationWorkflow } from './conversation/workflow.js';
export { replayCompactionWorkflow } from './replay.js';
export { webhookDeliveryWorkflow } from './webhookDelivery.js';
