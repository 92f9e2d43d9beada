// Phase 2 — boundaries (SPEC §8.3): head, tail walk, user anchors, oversized-turn rule, empty window.
import { hasToolCalls, isRealUserMessage } from './messages.js';
import { messageCost } from './tokens.js';
import type { ChatMessage } from './types.js';

export type NoopReason = 'insufficient_messages' | 'no_compressible_window';

export interface BoundaryLimits {
  protectFirstN: number;
  protectLastN: number;
  minTailUserMessages: number;
  tailTokenBudget: number;
  /** The engine's previous summary: needed to read the own text of merged summaries (§1.3, §8.5.1). */
  previousSummary?: string | null;
}

/** Window = messages[headEnd:cut]; `reinsertIndex` = input index of the user message to re-insert (§8.3.5). */
export interface Boundaries {
  headEnd: number;
  cut: number;
  reinsertIndex: number | null;
  noop: NoopReason | false;
}

function clampIndex(messages: readonly ChatMessage[], index: number): number {
  if (Number.isNaN(index)) return 0;
  return Math.min(Math.max(Math.trunc(index), 0), messages.length);
}

function roleAt(messages: readonly ChatMessage[], index: number): string | undefined {
  return messages[index]?.role;
}

/** §8.3.3: a window never starts with tool results whose call is in the head. */
export function alignBoundaryForward(messages: readonly ChatMessage[], index: number): number {
  let i = clampIndex(messages, index);
  while (i < messages.length && roleAt(messages, i) === 'tool') i++;
  return i;
}

/** §8.3.3: an assistant with tool calls and all of its results end up together in the tail. */
export function alignBoundaryBackward(messages: readonly ChatMessage[], index: number): number {
  const i = clampIndex(messages, index);
  if (i === 0 || i === messages.length) return i;
  let j = i - 1;
  while (j >= 0 && roleAt(messages, j) === 'tool') j--;
  const candidate = messages[j];
  return candidate !== undefined && hasToolCalls(candidate) ? j : i;
}

/** §8.3.1. */
export function findHeadEnd(messages: readonly ChatMessage[], protectFirstN: number): number {
  let h = protectFirstN;
  if (roleAt(messages, 0) === 'system' && h < 1) h = 1;
  return alignBoundaryForward(messages, Math.min(h, messages.length));
}

/** §8.3.2: token-budget walk from the end, then the hard minimum, then backward alignment (= budgetCut). */
export function findTailCut(
  messages: readonly ChatMessage[],
  headEnd: number,
  protectLastN: number,
  tailTokenBudget: number,
): number {
  const n = messages.length;
  let acc = 0;
  let cut = n;
  for (let i = n - 1; i >= headEnd; i--) {
    const cost = messageCost(messages[i] as ChatMessage);
    if (acc + cost > tailTokenBudget) break;
    acc += cost;
    cut = i;
  }
  if (cut === headEnd) cut = n - protectLastN;
  cut = Math.min(cut, n - protectLastN);
  return alignBoundaryBackward(messages, cut);
}

/** Real user messages at or after `headEnd`, newest first, at most `k` of them (the k-th newest is last). */
function newestRealUsers(
  messages: readonly ChatMessage[],
  headEnd: number,
  k: number,
  previousSummary: string | null,
): number[] {
  const found: number[] = [];
  for (let i = messages.length - 1; i >= headEnd && found.length < k; i--) {
    if (isRealUserMessage(messages[i] as ChatMessage, previousSummary)) found.push(i);
  }
  return found;
}

interface AnchoredCut {
  cut: number;
  reinsertIndex: number | null;
}

/** §8.3.4 user anchors and §8.3.5 oversized-turn rule, applied to the aligned budget cut. */
export function anchorToUsers(
  messages: readonly ChatMessage[],
  headEnd: number,
  budgetCut: number,
  minTailUserMessages: number,
  previousSummary: string | null,
): AnchoredCut {
  const k = Math.max(1, minTailUserMessages);
  const newest = newestRealUsers(messages, headEnd, k, previousSummary);
  const latest = newest[0];
  const target = newest[newest.length - 1];
  if (latest === undefined || target === undefined) return { cut: budgetCut, reinsertIndex: null };
  const anchor = (x: number) => (x < budgetCut ? alignBoundaryBackward(messages, x) : budgetCut);
  const c1 = anchor(target);
  if (c1 > headEnd) return { cut: c1, reinsertIndex: null };
  const c2 = anchor(latest);
  if (c2 > headEnd) return { cut: c2, reinsertIndex: null };
  const reinsert = headEnd <= latest && latest < budgetCut;
  return { cut: budgetCut, reinsertIndex: reinsert ? latest : null };
}

function sanitizeCount(value: number, minimum: number): number {
  return Number.isFinite(value) ? Math.max(minimum, Math.trunc(value)) : minimum;
}

/** S1–S4 of §8.1: the boundaries of a compaction on the unpruned input, or the no-op reason. */
export function findBoundaries(messages: readonly ChatMessage[], limits: BoundaryLimits): Boundaries {
  const n = messages.length;
  const protectFirstN = sanitizeCount(limits.protectFirstN, 0);
  const protectLastN = sanitizeCount(limits.protectLastN, 1);
  if (n <= protectFirstN + protectLastN + 1) {
    return { headEnd: 0, cut: 0, reinsertIndex: null, noop: 'insufficient_messages' };
  }
  const headEnd = findHeadEnd(messages, protectFirstN);
  const budgetCut = findTailCut(messages, headEnd, protectLastN, limits.tailTokenBudget);
  const anchored = anchorToUsers(
    messages,
    headEnd,
    budgetCut,
    sanitizeCount(limits.minTailUserMessages, 0),
    limits.previousSummary ?? null,
  );
  if (anchored.cut <= headEnd)
    return { headEnd, cut: anchored.cut, reinsertIndex: null, noop: 'no_compressible_window' };
  return { headEnd, cut: anchored.cut, reinsertIndex: anchored.reinsertIndex, noop: false };
}
