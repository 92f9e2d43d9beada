// Signals, updates and queries of the conversation workflow, shared by the workflow and its clients (DESIGN.md §3).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ChatMessage, CompressionStats, Usage } from '../engine/index.js';

/** One incoming message with the client's idempotency key (duplicates are ignored, also across continue-as-new). */
export interface IncomingMessage {
  message: ChatMessage;
  idempotencyKey: string;
}

/** A batch of messages, in order. `usage` is the provider's usage of the response that produced the assistant
 * message(s) of the batch (chat backend runs elsewhere: the client reports what the model said and cost). */
export interface SubmitMessages {
  messages: IncomingMessage[];
  usage?: Usage;
}

export type CompactionTrigger = 'preflight' | 'post_response' | 'manual' | 'hygiene';

export type CompactionStatus = 'committed' | 'fallback' | 'noop' | 'aborted' | 'rejected' | 'failed';

/** What one compaction did, as the conversation workflow and the manual-compress update report it. */
export interface CompactionResult {
  compactionId: string;
  trigger: CompactionTrigger;
  status: CompactionStatus;
  /** SPEC §16.5 notice for the user (no-op texts, abort, fallback), when there is one. */
  notice: string | null;
  noopReason: string | null;
  sessionId: string;
  stats: CompressionStats | null;
  error: string | null;
}

export interface CompactRequest {
  focusTopic?: string;
}

export interface SwitchModelRequest {
  model: string;
  provider?: string;
  /** Explicit window (like `model.context_length`); otherwise resolved from the registry (SPEC §4.1). */
  contextLength?: number;
}

export interface ConversationStatus {
  tenantId: string;
  conversationId: string;
  sessionId: string;
  model: string;
  provider: string | null;
  contextLength: number;
  thresholdPercent: number;
  thresholdTokens: number;
  lastPromptTokens: number;
  /** Tokens the next request is estimated to carry (last reading + estimate of what came after it). */
  contextTokens: number;
  usagePercent: number;
  compressionCount: number;
  activeMessages: number;
  ineffectiveStrikes: number;
  fallbackStreak: number;
  blockedBy: 'cooldown' | 'structural_backoff' | 'ineffective' | null;
  trippedUntil: string | null;
  summaryCooldownUntil: string | null;
  structuralBackoffUntil: string | null;
  hygieneCooldownUntil: string | null;
  policyVersion: number;
  pendingItems: number;
  processedBatches: number;
  lastCompaction: CompactionResult | null;
  notices: string[];
}

export const submitMessagesSignal = defineSignal<[SubmitMessages]>('submitMessages');
/** Sent by the replay workflow when a replayed summary replaced the fallback in the live transcript (SPEC §13.7). */
export const summaryReplacedSignal = defineSignal<[{ compactionId: string; summaryBody: string }]>('summaryReplaced');
export const compactUpdate = defineUpdate<CompactionResult, [CompactRequest]>('compact');
export const switchModelUpdate = defineUpdate<ConversationStatus, [SwitchModelRequest]>('switchModel');
/** Resolves once every signal received before it has been processed; returns the status then. */
export const syncUpdate = defineUpdate<ConversationStatus, []>('sync');
export const statusQuery = defineQuery<ConversationStatus>('status');
