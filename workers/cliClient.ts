// HTTP client of the gateway (used by `dctx` and the demo): one typed function per route over global fetch, errors
// as GatewayError carrying the gateway's message, and `importTranscript`, which replays a JSONL transcript.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { CompactionResult, ConversationStatus, IncomingMessage } from '../contracts/conversation.js';
import type { ChatMessage, CompressionStats, Usage } from '../engine/index.js';
import type { ReplayResult } from '../workflows/replay.js';
import {
  type BatchOptions,
  defaultConversationId,
  type PlannedBatch,
  parseTranscript,
  planBatches,
  TranscriptError,
  transcriptHash,
} from './transcript.js';

export type { ConversationStatus, ReplayResult };

/** Where the gateway is and which bearer key to send (a tenant key `dctx_...` or the admin key). */
export interface GatewayConnection {
  url: string;
  key: string;
  /** Injected in tests; global fetch otherwise. */
  fetch?: typeof fetch;
}

/** A failed request: `statusCode` is the HTTP status (0 when the gateway could not be reached). */
export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

const RETRYABLE = new Set([0, 429, 502, 503, 504]);

async function call<T>(conn: GatewayConnection, method: string, path: string, body?: unknown): Promise<T> {
  const url = `${conn.url.replace(/\/+$/, '')}${path}`;
  let res: Response;
  try {
    res = await (conn.fetch ?? fetch)(url, {
      method,
      headers: {
        authorization: `Bearer ${conn.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const detail = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new GatewayError(0, `cannot reach the gateway at ${conn.url} (${detail}); is it running? (dctx start)`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: handled below
  }
  if (!res.ok) {
    const message = (json as { message?: unknown } | null)?.message;
    throw new GatewayError(
      res.status,
      typeof message === 'string' && message ? message : `HTTP ${res.status} ${res.statusText}`.trim(),
    );
  }
  return json as T;
}

const query = (params: Record<string, string | number | boolean | undefined>): string => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
};
const seg = encodeURIComponent;

// ---- admin (admin key) ----

export interface Tenant {
  id: string;
  name: string;
  policy: Record<string, unknown>;
  policyVersion: number;
}

export interface IssuedKey {
  id: string;
  tenantId: string;
  key: string;
}

export function createTenant(
  conn: GatewayConnection,
  tenant: { id: string; name?: string; policy?: Record<string, unknown> },
): Promise<Tenant> {
  return call(conn, 'POST', '/v1/tenants', tenant);
}

export function createApiKey(conn: GatewayConnection, tenantId: string, label?: string): Promise<IssuedKey> {
  return call(conn, 'POST', `/v1/tenants/${seg(tenantId)}/keys`, label === undefined ? {} : { label });
}

export function setTenantPolicy(
  conn: GatewayConnection,
  tenantId: string,
  policy: Record<string, unknown>,
): Promise<{ tenantId: string; policy: Record<string, unknown>; policyVersion: number }> {
  return call(conn, 'PUT', `/v1/tenants/${seg(tenantId)}/policy`, policy);
}

// ---- conversations (tenant key) ----

export interface CreateConversation {
  conversationId?: string;
  model?: string;
  provider?: string;
  contextLength?: number;
  source?: string;
  title?: string;
}

export function createConversation(
  conn: GatewayConnection,
  body: CreateConversation,
): Promise<{ conversationId: string; status: ConversationStatus }> {
  return call(conn, 'POST', '/v1/conversations', body);
}

export interface PostMessages {
  messages: IncomingMessage[];
  usage?: Usage;
  wait?: boolean;
}

export function postMessages(
  conn: GatewayConnection,
  conversationId: string,
  body: PostMessages,
): Promise<{ accepted: number; status?: ConversationStatus }> {
  return call(conn, 'POST', `/v1/conversations/${seg(conversationId)}/messages`, body);
}

export interface PreparedContext {
  conversationId: string;
  sessionId: string;
  model: string;
  provider: string | null;
  promptCaching: { enabled: boolean; reason: string | null; line: string | null };
  estimatedTokens: number;
  messages: ChatMessage[];
}

export function getContext(
  conn: GatewayConnection,
  conversationId: string,
  options: { model?: string; provider?: string } = {},
): Promise<PreparedContext> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/context${query(options)}`);
}

export function compactConversation(
  conn: GatewayConnection,
  conversationId: string,
  focusTopic?: string,
): Promise<CompactionResult> {
  return call(conn, 'POST', `/v1/conversations/${seg(conversationId)}/compact`, focusTopic ? { focusTopic } : {});
}

export function getStatus(conn: GatewayConnection, conversationId: string): Promise<ConversationStatus> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/status`);
}

export interface StoredMessage {
  id: string;
  position: number;
  active: boolean;
  compacted: boolean;
  timestamp: string;
  message: ChatMessage;
}

export function listMessages(
  conn: GatewayConnection,
  conversationId: string,
  options: { archived?: boolean } = {},
): Promise<{ sessionId: string; messages: StoredMessage[] }> {
  return call(conn, 'GET', `/v1/conversations/${seg(conversationId)}/messages${query({ archived: options.archived })}`);
}

// ---- compactions (tenant key) ----

export interface CompactionSummary {
  id: string;
  conversationId: string;
  sessionId: string;
  seq: number;
  trigger: string;
  status: string;
  replayable: boolean;
  failureClass: string | null;
  error: string | null;
  attempts: number;
  stats: Partial<CompressionStats> | null;
  createdAt: string;
  completedAt: string | null;
}

export function listCompactions(
  conn: GatewayConnection,
  options: { status?: string[]; limit?: number; offset?: number } = {},
): Promise<{ compactions: CompactionSummary[] }> {
  const status = options.status?.length ? options.status.join(',') : undefined;
  return call(conn, 'GET', `/v1/compactions${query({ status, limit: options.limit, offset: options.offset })}`);
}

export function replayCompaction(conn: GatewayConnection, compactionId: string): Promise<ReplayResult> {
  return call(conn, 'POST', `/v1/compactions/${seg(compactionId)}/replay`);
}

// ---- search (tenant key) ----

export interface SearchResult {
  id: string;
  session_id: string;
  role: ChatMessage['role'];
  snippet: string;
  timestamp: string;
  tool_name: string | null;
  source: string;
  model: string | null;
  session_started: string;
  context: { role: string; content: string }[];
}

export interface SearchOptions {
  roles?: string[];
  sources?: string[];
  excludeSources?: string[];
  sort?: 'relevance' | 'newest' | 'oldest';
  limit?: number;
  offset?: number;
  includeInactive?: boolean;
}

export function search(
  conn: GatewayConnection,
  q: string,
  options: SearchOptions = {},
): Promise<{ results: SearchResult[] }> {
  const params = query({
    q,
    roles: options.roles?.join(','),
    sources: options.sources?.join(','),
    excludeSources: options.excludeSources?.join(','),
    sort: options.sort,
    limit: options.limit,
    offset: options.offset,
    includeInactive: options.includeInactive,
  });
  return call(conn, 'GET', `/v1/search${params}`);
}

// ---- ops (no key) ----

export function health(conn: Pick<GatewayConnection, 'url' | 'fetch'>): Promise<{ ok: boolean }> {
  return call({ ...conn, key: '' }, 'GET', '/healthz');
}

// ---- import ----

export interface ImportProgress {
  sentMessages: number;
  totalMessages: number;
  sentBatches: number;
  totalBatches: number;
  /** True while the last batch waits for the conversation to process everything. */
  waiting: boolean;
}

export interface ImportOptions extends BatchOptions {
  url: string;
  key: string;
  file: string;
  /** Default: derived from the file name and content hash (so a re-import targets the same conversation). */
  conversationId?: string;
  model?: string;
  provider?: string;
  contextLength?: number;
  /** Field holding the usage on a line (default `usage`). */
  usageField?: string;
  source?: string;
  title?: string;
  onProgress?: (progress: ImportProgress) => void;
  fetch?: typeof fetch;
  /** Attempts per batch on network errors, 429 and 502–504 (keys make a resend harmless). Default 4. */
  attempts?: number;
}

export interface ImportResult {
  conversationId: string;
  file: string;
  hash: string;
  messages: number;
  batches: number;
  /** The conversation's status once every imported message was processed. */
  status: ConversationStatus;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withRetries<T>(attempts: number, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const retryable = err instanceof GatewayError && RETRYABLE.has(err.statusCode);
      if (!retryable || attempt >= attempts) throw err;
      await sleep(250 * 2 ** (attempt - 1));
    }
  }
}

/**
 * Replays a JSONL transcript through the gateway: creates the conversation, posts the messages in order (keys
 * `<file-hash>:<line>`, so importing the same file again changes nothing), waits on the last batch until the
 * conversation has processed everything (compactions included) and returns its status.
 */
export async function importTranscript(options: ImportOptions): Promise<ImportResult> {
  const content = await readFile(options.file);
  const hash = transcriptHash(content);
  const entries = parseTranscript(content.toString('utf8'), {
    fileName: basename(options.file),
    ...(options.usageField ? { usageField: options.usageField } : {}),
  });
  if (entries.length === 0) throw new TranscriptError(`${basename(options.file)}: no messages to import`);
  const batches: PlannedBatch[] = planBatches(entries, hash, options);
  const conn: GatewayConnection = {
    url: options.url,
    key: options.key,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const attempts = options.attempts ?? 4;

  const conversationId = options.conversationId ?? defaultConversationId(options.file, hash);
  await withRetries(attempts, () =>
    createConversation(conn, {
      conversationId,
      ...(options.model ? { model: options.model } : {}),
      ...(options.provider ? { provider: options.provider } : {}),
      ...(options.contextLength ? { contextLength: options.contextLength } : {}),
      source: options.source ?? 'import',
      title: options.title ?? basename(options.file),
    }),
  );

  const progress: ImportProgress = {
    sentMessages: 0,
    totalMessages: entries.length,
    sentBatches: 0,
    totalBatches: batches.length,
    waiting: false,
  };
  options.onProgress?.({ ...progress });
  let status: ConversationStatus | undefined;
  for (let i = 0; i < batches.length; i++) {
    const batch = batches[i]!;
    const last = i === batches.length - 1;
    const body: PostMessages = { messages: batch.messages, ...(batch.usage ? { usage: batch.usage } : {}) };
    if (last) {
      progress.waiting = true;
      options.onProgress?.({ ...progress });
      body.wait = true;
    }
    const answer = await withRetries(attempts, () => postMessages(conn, conversationId, body));
    progress.sentMessages += batch.messages.length;
    progress.sentBatches += 1;
    if (last) {
      progress.waiting = false;
      status = answer.status;
    }
    options.onProgress?.({ ...progress });
  }
  status ??= await getStatus(conn, conversationId);
  return { conversationId, file: options.file, hash, messages: entries.length, batches: batches.length, status };
}
