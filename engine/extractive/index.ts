// The extractive summariser (issue #15 §2) and the facts the quality gate of LLM summaries checks (§3).

export {
  appendToCriticalContext,
  type GateItems,
  gateItemCount,
  gateItems,
  gateRepromptBlock,
  missingGateItems,
  retentionShare,
} from './gate.js';
export { IdentifierRanking, identifiersIn } from './identifiers.js';
export { isConstraint, splitSentences } from './sentences.js';
export { buildExtractiveSummaryBody, type ExtractiveSummaryInput } from './summary.js';
