// Phase 1 — prune old tool output (SPEC §8.2): dedup over the whole list, then clear tool rows before the cut.
import { DUPLICATE_TOOL_OUTPUT, ORPHAN_CALL_STUB, PRUNED_TOOL_OUTPUT, TOOL_OUTPUT_PRUNE_CHARS } from './constants.js';
import { longerThan } from './text.js';
import type { ChatMessage } from './types.js';

export interface PruneResult {
  messages: ChatMessage[];
  prunedCount: number;
}

const PLACEHOLDERS: readonly string[] = [PRUNED_TOOL_OUTPUT, DUPLICATE_TOOL_OUTPUT, ORPHAN_CALL_STUB];
const LONGEST_PLACEHOLDER = Math.max(...PLACEHOLDERS.map((p) => p.length));

/** Placeholder check without hashing long outputs: placeholders are short. */
function isPlaceholder(text: string): boolean {
  return text.length <= LONGEST_PLACEHOLDER && PLACEHOLDERS.includes(text);
}

/** String content of a tool row that is not a placeholder, else null. */
function replaceableToolText(message: ChatMessage): string | null {
  if (message.role !== 'tool' || typeof message.content !== 'string') return null;
  return isPlaceholder(message.content) ? null : message.content;
}

/** At least 200 characters (dedup candidate). */
function isDedupCandidate(text: string): boolean {
  return longerThan(text, TOOL_OUTPUT_PRUNE_CHARS - 1);
}

/** Longer than 200 characters (cleared before the cut). */
function isClearCandidate(text: string): boolean {
  return longerThan(text, TOOL_OUTPUT_PRUNE_CHARS);
}

function withContent(message: ChatMessage, content: string): ChatMessage {
  return { ...message, content };
}

const EDGE_SAMPLES = 8;
const MAX_LINEAR_BUCKET = 16;

/**
 * A cheap fingerprint (length, the first and the last 8 code units), so dedup does not hash every long output in
 * full. The samples sit in two places of the string, which keeps the memory touched per output small; outputs that
 * share both ends only land in the same bucket (compared exactly).
 */
function fingerprint(text: string): number {
  const len = text.length;
  let h = len | 0;
  for (let k = 0; k < EDGE_SAMPLES; k++) h = (Math.imul(h, 31) + text.charCodeAt(k)) | 0;
  for (let k = len - EDGE_SAMPLES; k < len; k++) h = (Math.imul(h, 31) + text.charCodeAt(k)) | 0;
  return h;
}

type Bucket = string | string[] | Set<string>;

/** Exact-equality set of strings, bucketed by fingerprint; a crowded bucket switches to a hashed Set. */
class StringSet {
  private readonly buckets = new Map<number, Bucket>();

  /** Adds `text`; returns false when an equal string was already present. */
  add(text: string): boolean {
    const key = fingerprint(text);
    const bucket = this.buckets.get(key);
    if (bucket === undefined) {
      this.buckets.set(key, text);
      return true;
    }
    if (typeof bucket === 'string') {
      if (bucket === text) return false;
      this.buckets.set(key, [bucket, text]);
      return true;
    }
    if (bucket instanceof Set) {
      if (bucket.has(text)) return false;
      bucket.add(text);
      return true;
    }
    if (bucket.includes(text)) return false;
    if (bucket.length < MAX_LINEAR_BUCKET) bucket.push(text);
    else this.buckets.set(key, new Set([...bucket, text]));
    return true;
  }
}

/** §8.2 step 1: newest copy of each repeated tool output keeps its text; older copies get the placeholder. */
function dedupToolOutputs(working: ChatMessage[]): number {
  const newestSeen = new StringSet();
  let replaced = 0;
  for (let i = working.length - 1; i >= 0; i--) {
    const message = working[i] as ChatMessage;
    const text = replaceableToolText(message);
    if (text === null || !isDedupCandidate(text)) continue;
    if (!newestSeen.add(text)) {
      working[i] = withContent(message, DUPLICATE_TOOL_OUTPUT);
      replaced++;
    }
  }
  return replaced;
}

/** §8.2 step 2: long tool outputs before the cut (head included) are cleared. */
function clearOldToolOutputs(working: ChatMessage[], cut: number): number {
  let replaced = 0;
  const end = Math.min(cut, working.length);
  for (let i = 0; i < end; i++) {
    const message = working[i] as ChatMessage;
    const text = replaceableToolText(message);
    if (text === null || !isClearCandidate(text)) continue;
    working[i] = withContent(message, PRUNED_TOOL_OUTPUT);
    replaced++;
  }
  return replaced;
}

/** Phase 1 on a working copy; the input array and its messages are never modified. */
export function pruneToolOutputs(messages: readonly ChatMessage[], cut: number): PruneResult {
  const working = messages.slice();
  const prunedCount = dedupToolOutputs(working) + clearOldToolOutputs(working, cut);
  return { messages: working, prunedCount };
}
