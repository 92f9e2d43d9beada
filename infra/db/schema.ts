// The database schema as one typed interface (kysely). Mirrors migrations/; SPEC §13.1. JSON columns read as their
// stored shapes (contracts/, engine/) and are written as JSON text; status and trigger columns use the contracts'
// unions (their CHECK constraints list the same values).

import type { ColumnType, Generated, Insertable, JSONColumnType, Selectable, Updateable } from 'kysely';
import type {
  CompactionSummaryBackend,
  NativeFallbackReason,
  NativeSummary,
  StoredCompactionStatus,
  StoredCompactionTrigger,
  StoredPlan,
  StoredPrune,
  StoredStats,
  SummaryUsage,
} from '../../contracts/compaction.js';
import type { ConversationStatus } from '../../contracts/conversation.js';
import type { KeyScope } from '../../contracts/http/admin.js';
import type { CompressorState } from '../../engine/compressorState.js';
import type { SummaryFailureClass } from '../../engine/fallbackSummary.js';
import type { NotifiedSince } from '../../engine/gatewayTurns.js';
import type { NativeReplay } from '../../engine/nativeCompaction.js';
import type { QuietFold, QuietRules } from '../../engine/quietBatches.js';
import type { ContentPart, ToolCall } from '../../engine/types.js';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** A jsonb column: read as T, written as JSON text. */
type Json<T extends object> = JSONColumnType<T, string, string>;
/** A nullable jsonb column (absent on insert reads as NULL). */
type NullableJson<T extends object> = JSONColumnType<T | null, string | null | undefined, string | null>;

export interface TenantsTable {
  id: string;
  name: string;
  policy: JSONColumnType<Record<string, unknown>, string | undefined, string>;
  policy_version: Generated<number>;
  created_at: Timestamp;
}

export interface TenantMarkersTable {
  tenant_id: string;
  key: string;
  value: string;
  updated_at: Timestamp;
}

export interface SessionsTable {
  tenant_id: string;
  id: string;
  conversation_id: string;
  source: Generated<string>;
  model: string | null;
  provider: string | null;
  title: string | null;
  started_at: Timestamp;
  ended_at: NullableTimestamp;
  end_reason: string | null;
  parent_session_id: string | null;
  compression_count: Generated<number>;
  responses_native_disabled: Generated<boolean>;
  /** The route refused Anthropic's compaction beta (0018): the session's compactions use the local summariser. */
  anthropic_native_disabled: Generated<boolean>;
  compressor_state: NullableJson<Partial<CompressorState>>;
}

export interface MessagesTable {
  id: Generated<number>;
  tenant_id: string;
  session_id: string;
  /** Idempotency keys are unique per conversation (migrations/0006). */
  conversation_id: string;
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  content_parts: NullableJson<ContentPart[]>;
  tool_calls: NullableJson<ToolCall[]>;
  tool_call_id: string | null;
  tool_name: string | null;
  extra: NullableJson<Record<string, unknown>>;
  /** The exact message as JSON text when it holds characters text/jsonb cannot store (messageRows.ts). */
  raw_message: string | null;
  timestamp: Timestamp;
  summary_body: string | null;
  idempotency_key: string | null;
  token_estimate: Generated<number>;
  indexed_text: ColumnType<string, never, never>;
  search_tsv: ColumnType<string, never, never>;
  /** CJK unigrams and bigrams of indexed_text (migrations/0002): prefilter of the 1–2-character CJK search. */
  cjk_grams: ColumnType<string[], never, never>;
  /** An operator pinned the message (migrations/0007; SPEC §19 `rehydrate_pinned`). */
  pinned: Generated<boolean>;
}

/**
 * A message's row state (migrations/0008), apart from its text so that a compaction commit never rewrites the search
 * columns: the session holding it, the SPEC §13.1 flags, its position in the transcript, the compaction that
 * inserted or archived it.
 */
export interface MessageStateTable {
  tenant_id: string;
  message_id: number;
  session_id: string;
  active: Generated<boolean>;
  compacted: Generated<boolean>;
  position: number;
  compaction_id: string | null;
}

/** One conversation: the log's head (current session, totals, version) and the workflow's published state. */
export interface ConversationsTable {
  tenant_id: string;
  id: string;
  current_session_id: string;
  model: string;
  provider: string | null;
  context_length: number | null;
  source: Generated<string>;
  title: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Bumped by every change of the transcript (append, commit, replay swap) under the row's lock. */
  version: Generated<number>;
  /** Accepted batches (each non-empty append bumps it); notifications carry it. */
  batch_seq: Generated<number>;
  /** The workflow has taken every decision due for the batches up to this one. */
  applied_seq: Generated<number>;
  active_messages: Generated<number>;
  active_tokens: Generated<number>;
  /** The workflow's published status (storable JSON, written by publishState). */
  state: NullableJson<ConversationStatus>;
  /** The applied position of that status snapshot (a retried older write never replaces a newer one). */
  state_seq: Generated<number>;
  /** Bumped by every notification, transcript swap and policy change: rules of an older epoch are void (0009). */
  notify_epoch: Generated<number>;
  /** Published by the workflow: which batches need no notification (engine/quietBatches.ts). */
  quiet_rules: NullableJson<QuietRules>;
  /** The quiet batches since the last notification, summed; taken by the next one. */
  quiet_fold: NullableJson<QuietFold>;
  /** What was notified since the rules (0011); null: unknown until the workflow publishes again. */
  notified_since: NullableJson<NotifiedSince>;
  /** SPEC §15.2: the Codex app-server thread holding the conversation's context (migrations/0017). */
  codex_thread_id: string | null;
  /** Drop-in histories match the rows above this message id: those since the latest client compaction (0013). */
  client_floor: ColumnType<string, string | number | undefined, string | number>;
  /** The idempotency key of the newest keyed message appended to the current session (0014); compactions leave it. */
  last_key: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface CompactionsTable {
  tenant_id: string;
  id: string;
  session_id: string;
  conversation_id: string;
  seq: number;
  trigger: StoredCompactionTrigger;
  status: ColumnType<StoredCompactionStatus, StoredCompactionStatus | undefined, StoredCompactionStatus>;
  in_place: Generated<boolean>;
  focus_topic: string | null;
  previous_summary: string | null;
  plan: NullableJson<StoredPlan>;
  prune_result: NullableJson<StoredPrune>;
  summary: string | null;
  summary_body: string | null;
  fallback_used: Generated<boolean>;
  failure_class: SummaryFailureClass | null;
  stats: NullableJson<StoredStats>;
  replayable: Generated<boolean>;
  compacted_row_ids: ColumnType<number[], number[] | undefined, number[]>;
  new_session_id: string | null;
  error: string | null;
  attempts: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: NullableTimestamp;
  cache_rewrite_tokens: number | null;
  cache_recovery_turns: number | null;
  /** Who wrote the committed summary (migrations/0007). */
  summary_backend: CompactionSummaryBackend | null;
  /** Quality gate of an LLM summary: retention share before and after it (null: no gate ran). */
  retention_before: number | null;
  retention_after: number | null;
  /** A compaction someone else ran (SPEC §15.2): the newest stored message when it happened (migrations/0017). */
  boundary_message_id: number | null;
  /** An app-server compaction: the thread and the turn that held its `contextCompaction` item. */
  thread_id: string | null;
  turn_id: string | null;
  /** An `anthropic_native` summary's signed block and its origin (migrations/0018). */
  native_summary: NullableJson<NativeSummary>;
  /** Why an `anthropic_native` compaction used the local summariser instead. */
  native_fallback: NativeFallbackReason | null;
  /** What a provider-side summary cost (its compaction iterations). */
  summary_usage: NullableJson<SummaryUsage>;
  /** The context engine that produced the result: `compressor` or a plugin's name (migrations/0022, SPEC §10.3). */
  engine: Generated<string>;
  /** Why the built-in compressor did the work although another engine was configured (the §10.3 line). */
  engine_fallback: string | null;
}

export interface EventsTable {
  id: Generated<number>;
  tenant_id: string;
  session_id: string | null;
  /** Filled from the session when the writer gives none (migrations/0021). */
  conversation_id: ColumnType<string | null, string | null | undefined, string | null>;
  type: string;
  payload: Json<Record<string, unknown>>;
  compaction_id: string | null;
  /** An event a retried writer may write twice is written once (a workflow notice: its run and number). */
  dedupe_key: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

/** A tenant's webhook endpoint (migrations/0021, issue #14 §2); deleted by marking it. */
export interface WebhooksTable {
  tenant_id: string;
  id: string;
  url: string;
  secret: string;
  description: string | null;
  created_at: Timestamp;
  deleted_at: NullableTimestamp;
  /** Events up to this id were handed to delivery. */
  dispatched_through: ColumnType<string, string | number | undefined, string | number>;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event's delivery to one endpoint: at least once, retried durably (workflows/webhookDelivery.ts). */
export interface WebhookDeliveriesTable {
  tenant_id: string;
  webhook_id: string;
  event_id: ColumnType<string, string | number, string | number>;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: Generated<number>;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  delivered_at: NullableTimestamp;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  key_hash: string;
  label: string | null;
  created_at: Timestamp;
  /** When the key stops working; a future time while a rotation's overlap lasts (migrations/0019). */
  revoked_at: NullableTimestamp;
  /** `full` or `read` (migrations/0019). */
  scope: ColumnType<KeyScope, KeyScope | undefined, KeyScope>;
  /** The key a rotation replaced (migrations/0019). */
  replaces: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface TurnsTable {
  tenant_id: string;
  id: string;
  session_id: string;
  conversation_id: string;
  model: string;
  provider: string | null;
  message_id: number | null;
  finish_reason: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  uncached_input_tokens: number;
  caching_enabled: boolean;
  after_compaction_id: string | null;
  created_at: Timestamp;
  /** The reply's `compaction` items and their route (0015, SPEC §15.1 replay data); null for other turns. */
  replay: NullableJson<NativeReplay>;
}

/** The audit trail of erasures (migrations/0020): who erased what, when, how many rows; owner-only. */
export interface ErasuresTable {
  id: Generated<number>;
  scope: 'conversation' | 'tenant';
  tenant_id: string;
  conversation_id: string | null;
  requested_by: string;
  reason: string | null;
  status: ColumnType<'rows_deleted' | 'completed', 'rows_deleted' | 'completed' | undefined, 'completed'>;
  rows_deleted: Json<Record<string, number>>;
  workflows_deleted: Generated<number>;
  requested_at: Timestamp;
  completed_at: NullableTimestamp;
}

export interface Database {
  erasures: ErasuresTable;
  turns: TurnsTable;
  api_keys: ApiKeysTable;
  tenants: TenantsTable;
  tenant_markers: TenantMarkersTable;
  sessions: SessionsTable;
  conversations: ConversationsTable;
  messages: MessagesTable;
  message_state: MessageStateTable;
  compactions: CompactionsTable;
  events: EventsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

export type MessageRow = Selectable<MessagesTable>;
export type NewMessageRow = Insertable<MessagesTable>;
export type MessageRowUpdate = Updateable<MessagesTable>;
export type MessageStateRow = Selectable<MessageStateTable>;
export type SessionRow = Selectable<SessionsTable>;
export type ConversationRow = Selectable<ConversationsTable>;
export type CompactionRow = Selectable<CompactionsTable>;
export type TenantRow = Selectable<TenantsTable>;
