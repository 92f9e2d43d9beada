// Phase 4 — reassemble (SPEC §8.6 with §18.1, §18.3): system note, summary role and merge, re-inserted user
// message, assembly, then tool-pair sanitising (§8.7).
import { SYSTEM_NOTE } from './constants.js';
import { contentText, ownContent, summaryText } from './messages.js';
import { sanitizeToolPairs } from './sanitizer.js';
import type { ChatMessage, ContentPart, Role } from './types.js';

/** §8.6.1: append the note once; idempotent across compactions and restarts. */
export function withSystemNote(message: ChatMessage): ChatMessage {
  if (contentText(message.content).includes(SYSTEM_NOTE)) return message;
  const content = message.content;
  if (typeof content === 'string') {
    return { ...message, content: content === '' ? SYSTEM_NOTE : `${content}\n\n${SYSTEM_NOTE}` };
  }
  if (Array.isArray(content)) return { ...message, content: [...content, { type: 'text', text: SYSTEM_NOTE }] };
  return { ...message, content: SYSTEM_NOTE };
}

export type SummaryPlacement = { kind: 'standalone'; role: 'user' | 'assistant' } | { kind: 'merge' };

/**
 * §8.6.2 role rule on sanitised neighbours (§18.1). `lastHeadRole` null = empty head; `firstTailRole` null =
 * empty sanitised tail (always standalone).
 */
export function chooseSummaryPlacement(lastHeadRole: Role | null, firstTailRole: Role | null): SummaryPlacement {
  const headRole = lastHeadRole ?? 'user';
  const role = headRole === 'assistant' || headRole === 'tool' ? 'user' : 'assistant';
  if (firstTailRole === null || role !== firstTailRole) return { kind: 'standalone', role };
  const flipped = role === 'user' ? 'assistant' : 'user';
  return flipped !== headRole ? { kind: 'standalone', role: flipped } : { kind: 'merge' };
}

/** §8.6.2 merge: the summary text goes in front of the row's content. */
export function mergeSummaryInto(message: ChatMessage, text: string): ChatMessage {
  const content = message.content;
  if (typeof content === 'string' && content !== '') return { ...message, content: `${text}\n\n${content}` };
  if (Array.isArray(content)) return { ...message, content: [{ type: 'text', text }, ...content] };
  return { ...message, content: text };
}

/** JSON-shaped deep copy of message content (structuredClone is not available in every workflow sandbox). */
function cloneJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneJson) as T;
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) copy[key] = cloneJson(inner);
    return copy as T;
  }
  return value;
}

/** §8.6.3 with §18.3: a fresh user message with (the own part of) the latest real user message's content. */
export function reinsertedUserCopy(source: ChatMessage, previousSummary: string | null): ChatMessage {
  const content = cloneJson(ownContent(source, previousSummary) ?? null) as string | ContentPart[] | null;
  const copy: ChatMessage = { role: 'user', content };
  if (source.name !== undefined) copy.name = source.name;
  return copy;
}

export interface ReassemblyInput {
  /** Phase 1 output (the working copy). */
  working: readonly ChatMessage[];
  /** The unpruned input (source of the re-inserted copy). */
  input: readonly ChatMessage[];
  headEnd: number;
  cut: number;
  reinsertIndex: number | null;
  summaryBody: string;
  previousSummary: string | null;
}

interface SanitisedSides {
  head: ChatMessage[];
  tail: ChatMessage[];
}

/** Sanitise head and tail as one list with the summary between them (§18.1), so the exemption of the last row
 * and the stub positions are those of the final output. */
function sanitiseAroundSummary(head: ChatMessage[], tailSeq: ChatMessage[], text: string): SanitisedSides {
  const seam: ChatMessage = { role: 'user', content: text };
  const sanitised = sanitizeToolPairs([...head, seam, ...tailSeq]);
  const at = sanitised.lastIndexOf(seam);
  return { head: sanitised.slice(0, at), tail: sanitised.slice(at + 1) };
}

/** §8.6.4 assembly followed by §8.7. */
export function reassemble(input: ReassemblyInput): ChatMessage[] {
  const { working, headEnd, cut, reinsertIndex } = input;
  const head = working.slice(0, headEnd);
  if (head[0]?.role === 'system') head[0] = withSystemNote(head[0]);
  const source = reinsertIndex === null ? undefined : input.input[reinsertIndex];
  const reinserted = source === undefined ? [] : [reinsertedUserCopy(source, input.previousSummary)];
  const text = summaryText(input.summaryBody);
  const sides = sanitiseAroundSummary(head, [...reinserted, ...working.slice(cut)], text);
  const placement = chooseSummaryPlacement(sides.head.at(-1)?.role ?? null, sides.tail[0]?.role ?? null);
  if (placement.kind === 'standalone') {
    return sanitizeToolPairs([...sides.head, { role: placement.role, content: text }, ...sides.tail]);
  }
  const [first, ...rest] = sides.tail as [ChatMessage, ...ChatMessage[]];
  return sanitizeToolPairs([...sides.head, mergeSummaryInto(first, text), ...rest]);
}
