// A worker's memory of the compaction inputs its align activity read (issue #11 §5): the later phases of the same
// compaction on the same worker take the messages from here instead of reading and parsing the whole window from
// PostgreSQL again (at 2,000 messages each read cost ~40 ms, four of them per compaction).
//
// Only an optimisation: a miss (another worker, a restarted one, an evicted or expired entry) reads PostgreSQL as
// before, and the commit still checks the transcript inside its own transaction. What is kept is exactly what the
// phases read by row id (message content never changes; runtime properties change only in this compaction's commit),
// frozen so that no phase can change what a later phase sees. Pins are not kept: operators change them at any time.
import type { ChatMessage } from '../../engine/index.js';

export interface WindowCacheOptions {
  /** Estimated tokens over all entries (the oldest entries go first beyond it). */
  maxTokens?: number;
  maxEntries?: number;
  /** An entry older than this is a miss (a compaction whose workflow was terminated leaves its entry behind). */
  ttlMs?: number;
  now?: () => number;
}

interface Entry {
  rowIds: readonly number[];
  messages: readonly ChatMessage[];
  tokens: number;
  storedAt: number;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class WindowCache {
  private readonly entries = new Map<string, Entry>();
  private tokens = 0;
  private readonly maxTokens: number;
  private readonly maxEntries: number;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: WindowCacheOptions = {}) {
    this.maxTokens = options.maxTokens ?? 4_000_000;
    this.maxEntries = options.maxEntries ?? 64;
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Keeps the input of a compaction (frozen in place: the caller must not change it afterwards). */
  put(tenantId: string, compactionId: string, rowIds: readonly number[], messages: ChatMessage[], tokens: number) {
    if (rowIds.length !== messages.length) throw new RangeError('one message per row id');
    this.delete(tenantId, compactionId);
    if (tokens > this.maxTokens) return;
    const entry: Entry = {
      rowIds: deepFreeze([...rowIds]),
      messages: deepFreeze(messages),
      tokens,
      storedAt: this.now(),
    };
    this.entries.set(key(tenantId, compactionId), entry);
    this.tokens += tokens;
    for (const [k, oldest] of this.entries) {
      if (this.tokens <= this.maxTokens && this.entries.size <= this.maxEntries) break;
      this.remove(k, oldest);
    }
  }

  /** The kept input when it is exactly the rows `rowIds` names, in that order; undefined otherwise. */
  get(tenantId: string, compactionId: string, rowIds: readonly number[]): readonly ChatMessage[] | undefined {
    const k = key(tenantId, compactionId);
    const entry = this.entries.get(k);
    if (!entry) return undefined;
    if (this.now() - entry.storedAt > this.ttlMs || !sameIds(entry.rowIds, rowIds)) {
      this.remove(k, entry);
      return undefined;
    }
    return entry.messages;
  }

  delete(tenantId: string, compactionId: string): void {
    const k = key(tenantId, compactionId);
    const entry = this.entries.get(k);
    if (entry) this.remove(k, entry);
  }

  get size(): number {
    return this.entries.size;
  }

  private remove(k: string, entry: Entry): void {
    this.entries.delete(k);
    this.tokens -= entry.tokens;
  }
}

function key(tenantId: string, compactionId: string): string {
  return `${tenantId}\u0000${compactionId}`;
}
