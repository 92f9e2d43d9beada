// Search attributes of DESIGN.md §3: the Temporal UI filters conversations and compactions by these.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TenantId = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const ConversationId = defineSearchAttributeKey('ConversationId', SearchAttributeType.KEYWORD);
export const SessionId = defineSearchAttributeKey('SessionId', SearchAttributeType.KEYWORD);
export const Model = defineSearchAttributeKey('Model', SearchAttributeType.KEYWORD);
export const CompactionStatus = defineSearchAttributeKey('CompactionStatus', SearchAttributeType.KEYWORD);
export const CompactionTrigger = defineSearchAttributeKey('CompactionTrigger', SearchAttributeType.KEYWORD);
export const CompactionCount = defineSearchAttributeKey('CompactionCount', SearchAttributeType.INT);
export const ContextTokens = defineSearchAttributeKey('ContextTokens', SearchAttributeType.INT);

/** Every key, for registration at server start (name + CLI type name). */
export const SEARCH_ATTRIBUTES: ReadonlyArray<{ name: string; type: 'Keyword' | 'Int' }> = [
  { name: TenantId.name, type: 'Keyword' },
  { name: ConversationId.name, type: 'Keyword' },
  { name: SessionId.name, type: 'Keyword' },
  { name: Model.name, type: 'Keyword' },
  { name: CompactionStatus.name, type: 'Keyword' },
  { name: CompactionTrigger.name, type: 'Keyword' },
  { name: CompactionCount.name, type: 'Int' },
  { name: ContextTokens.name, type: 'Int' },
];
