// Signals, updates and queries of the conversation workflow, shared by the workflow and its clients (DESIGN.md §3).
// Their payloads are content-free (contracts/): messages are committed to PostgreSQL first, then referenced by ids.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type {
  ChatTurnRequest,
  ClientCompaction,
  CompactionResult,
  CompactRequest,
  ConversationStatus,
  SwitchModelRequest,
  TurnOutcome,
} from '../contracts/conversation.js';
import type { StoredBatch } from '../contracts/conversationLog.js';

/** A batch was committed to the conversation's log (content-free, DESIGN.md §3). */
export const batchStoredSignal = defineSignal<[StoredBatch]>('batchStored');
/** Sent by the replay workflow when a replayed summary replaced the fallback in the live transcript (SPEC §13.7). */
export const summaryReplacedSignal = defineSignal<[{ compactionId: string; summaryBody: string }]>('summaryReplaced');
/** The gateway committed a drop-in client's own compaction: its new session holds what the client sends now. */
export const clientCompactedSignal = defineSignal<[ClientCompaction]>('clientCompacted');
export const compactUpdate = defineUpdate<CompactionResult, [CompactRequest]>('compact');
export const switchModelUpdate = defineUpdate<ConversationStatus, [SwitchModelRequest]>('switchModel');
export const statusQuery = defineQuery<ConversationStatus>('status');
export const chatTurnUpdate = defineUpdate<TurnOutcome, [ChatTurnRequest]>('chatTurn');
