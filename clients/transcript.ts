// Transcript files for import (`dctx import`, the demo; pure): JSONL parsing with errors that name the line,
// deterministic idempotency keys (`<file-hash>:<line>`, so a re-import is a no-op) and the split into the batches
// posted to the gateway (clients/importTranscript.ts).
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { IncomingMessage } from '../contracts/conversation.js';
import { MAX_BATCH_MESSAGES, validateSubmit } from '../contracts/validation.js';
import type { ChatMessage, Usage } from '../engine/index.js';

/** One message of a transcript file, with its 1-based line number and the usage reported with it. */
export interface TranscriptEntry {
  line: number;
  message: ChatMessage;
  usage?: Usage;
}

/** A transcript line that cannot be imported; the message names the line (and the file when known). */
export class TranscriptError extends Error {
  override name = 'TranscriptError';
}

export interface ParseOptions {
  /** Field holding the provider usage (default `usage`), on a `{message, usage}` line or on a bare message. */
  usageField?: string;
  /** Used in error messages. */
  fileName?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Parses a JSONL transcript: each non-blank line is a bare chat message (`{"role": ..., "content": ...}`) or
 * `{"message": <chat message>, "usage"?: {...}}`. Blank lines are skipped (line numbers still count them).
 */
export function parseTranscript(text: string, options: ParseOptions = {}): TranscriptEntry[] {
  const usageField = options.usageField ?? 'usage';
  const where = (line: number) => (options.fileName ? `${options.fileName}:${line}` : `line ${line}`);
  const entries: TranscriptEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = (lines[i] ?? '').replace(/\r$/, '');
    if (raw.trim() === '') continue;
    const line = i + 1;
    let value: unknown;
    try {
      value = JSON.parse(i === 0 ? raw.replace(/^\uFEFF/, '') : raw);
    } catch (err) {
      throw new TranscriptError(`${where(line)}: invalid JSON (${(err as Error).message})`);
    }
    if (!isObject(value)) {
      throw new TranscriptError(
        `${where(line)}: expected a JSON object (a chat message or {"message": ..., "usage": ...})`,
      );
    }
    let message: Record<string, unknown>;
    let usage: unknown;
    if (!('role' in value) && 'message' in value) {
      if (!isObject(value.message))
        throw new TranscriptError(`${where(line)}: "message" must be a chat message object`);
      message = { ...value.message };
      usage = value[usageField];
    } else {
      const { [usageField]: bareUsage, ...rest } = value;
      message = rest;
      usage = bareUsage;
    }
    // Assistant messages that only call tools often omit `content`; the wire shape wants it explicit.
    if (!('content' in message) && Array.isArray(message.tool_calls)) message.content = null;
    const problem = validateSubmit({
      messages: [{ message, idempotencyKey: 'k' }],
      ...(usage === undefined || usage === null ? {} : { usage }),
    });
    if (problem) throw new TranscriptError(`${where(line)}: ${problem.replace(/^messages\[0\]\./, '')}`);
    const entry: TranscriptEntry = { line, message: message as unknown as ChatMessage };
    if (isObject(usage)) entry.usage = usage as Usage;
    entries.push(entry);
  }
  return entries;
}

/** Short content hash of a transcript file: the first half of its idempotency keys. */
export function transcriptHash(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 16);
}

export const idempotencyKeyOf = (hash: string, line: number): string => `${hash}:${line}`;

/** A conversation id derived from the file, so that importing the same file twice targets the same conversation. */
export function defaultConversationId(file: string, hash: string): string {
  const stem = basename(file)
    .replace(/\.jsonl?$/i, '')
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 100);
  return `${stem || 'import'}-${hash.slice(0, 12)}`;
}

export interface PlannedBatch {
  messages: IncomingMessage[];
  usage?: Usage;
  firstLine: number;
  lastLine: number;
}

export interface BatchOptions {
  /** Most messages per batch (default 50, at most the workflow's limit of 500). */
  batchSize?: number;
  /** Largest JSON size of a batch's messages in bytes (default 512 KiB, under the gateway's 1 MiB body limit). */
  maxBatchBytes?: number;
}

export const DEFAULT_BATCH_SIZE = 50;
export const DEFAULT_MAX_BATCH_BYTES = 512 * 1024;

/**
 * Splits the entries into batches in order, as a live client would have sent them: a user message starts a new
 * batch (a new turn), a message that carries usage ends its batch (the usage belongs to the response that produced
 * it), and no batch exceeds the size limits.
 */
export function planBatches(
  entries: readonly TranscriptEntry[],
  hash: string,
  options: BatchOptions = {},
): PlannedBatch[] {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_MESSAGES) {
    throw new RangeError(`batch size must be an integer between 1 and ${MAX_BATCH_MESSAGES} (got ${batchSize})`);
  }
  const maxBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  const batches: PlannedBatch[] = [];
  let current: PlannedBatch | null = null;
  let bytes = 0;
  const close = () => {
    if (current) batches.push(current);
    current = null;
    bytes = 0;
  };
  for (const entry of entries) {
    const item: IncomingMessage = { message: entry.message, idempotencyKey: idempotencyKeyOf(hash, entry.line) };
    const size = Buffer.byteLength(JSON.stringify(item));
    if (current && (entry.message.role === 'user' || bytes + size > maxBytes)) close();
    current ??= { messages: [], firstLine: entry.line, lastLine: entry.line };
    current.messages.push(item);
    current.lastLine = entry.line;
    bytes += size;
    if (entry.usage) current.usage = entry.usage;
    if (entry.usage || current.messages.length >= batchSize) close();
  }
  close();
  return batches;
}
