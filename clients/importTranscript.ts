// Import of a JSONL transcript through the gateway (`dctx import`, the demo): creates the conversation, posts the
// batches in order with file-hash idempotency keys and waits on the last one, retrying what an outage refused.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import {
  createConversation,
  type GatewayConnection,
  GatewayError,
  getStatus,
  type PostMessages,
  type PublishedStatus,
  postMessages,
  RETRYABLE_STATUSES,
} from './httpClient.js';
import {
  type BatchOptions,
  defaultConversationId,
  type PlannedBatch,
  parseTranscript,
  planBatches,
  TranscriptError,
  transcriptHash,
} from './transcript.js';

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
  status: PublishedStatus;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withRetries<T>(attempts: number, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const retryable = err instanceof GatewayError && RETRYABLE_STATUSES.has(err.statusCode);
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
  let status: PublishedStatus | undefined;
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
      if ('status' in answer) status = answer.status;
    }
    options.onProgress?.({ ...progress });
  }
  status ??= await getStatus(conn, conversationId);
  return { conversationId, file: options.file, hash, messages: entries.length, batches: batches.length, status };
}
