// Derived notions of a message (SPEC §1.3): its text, summary messages and their own text (§8.5.1, §18.2,
// §18.4), summary-body normalisation (§8.5.7) and real user messages.
import { COMPACTION_MARKER, LEGACY_SUMMARY_MARKER, SUMMARY_PREFIX, SYNTHETIC_USER_PREFIXES } from './constants.js';
import type { ChatMessage, ContentPart } from './types.js';

export type MessageContent = ChatMessage['content'];

/** The part of a summary message that is summary (`body`) and the part that is not (`own`), §8.5.1. */
export interface SummarySplit {
  body: string;
  own: string | ContentPart[];
}

function isTextPart(part: unknown): part is Extract<ContentPart, { type: 'text' }> {
  return typeof part === 'object' && part !== null && (part as ContentPart).type === 'text';
}

function isImagePart(part: unknown): boolean {
  return typeof part === 'object' && part !== null && (part as ContentPart).type === 'image_url';
}

function partText(part: Extract<ContentPart, { type: 'text' }>): string {
  return typeof part.text === 'string' ? part.text : '';
}

/** Text of a content value (§1.3): a string as is, null/missing '', text parts joined with '\n'. */
export function contentText(content: MessageContent | undefined): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) if (isTextPart(part)) texts.push(partText(part));
  return texts.join('\n');
}

/** Text of a message (§1.3). */
export function messageText(message: ChatMessage): string {
  return contentText(message.content);
}

export function hasImagePart(content: MessageContent | undefined): boolean {
  return Array.isArray(content) && content.some(isImagePart);
}

/** An assistant message "has tool calls" when the array exists and is non-empty (§1.2). */
export function hasToolCalls(message: ChatMessage): boolean {
  return message.role === 'assistant' && Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

function startsAsSummary(text: string): boolean {
  const t = text.trimStart();
  return t.startsWith(COMPACTION_MARKER) || t.startsWith(LEGACY_SUMMARY_MARKER);
}

/** The text the summary test of §1.3 looks at: the string, or the first part when it is a text part. */
function summaryCandidateText(content: MessageContent | undefined): string | null {
  if (typeof content === 'string') return content;
  if (Array.isArray(content) && content.length > 0 && isTextPart(content[0])) return partText(content[0]);
  return null;
}

/** Summary message (§1.3): a user or assistant row whose text starts with a summary marker. */
export function isSummaryMessage(message: ChatMessage): boolean {
  if (message.role !== 'user' && message.role !== 'assistant') return false;
  const text = summaryCandidateText(message.content);
  return text !== null && startsAsSummary(text);
}

/** §8.5.7: strip stale prefixes (never stacking) and surrounding whitespace. */
export function normalizeSummaryBody(text: string): string {
  let s = typeof text === 'string' ? text.trimStart() : '';
  for (;;) {
    if (s.startsWith(LEGACY_SUMMARY_MARKER)) {
      s = s.slice(LEGACY_SUMMARY_MARKER.length).trimStart();
    } else if (s.startsWith(COMPACTION_MARKER)) {
      const newline = s.indexOf('\n');
      s = newline < 0 ? '' : s.slice(newline + 1).trimStart();
    } else {
      return s.trimEnd();
    }
  }
}

/** `SUMMARY_PREFIX + '\n' + body` (§8.5.7). */
export function summaryText(body: string): string {
  return `${SUMMARY_PREFIX}\n${body}`;
}

/** §8.5.1 with §18.4: split string content at the known previous summary, else all of it is body. */
function splitStringSummary(content: string, previousSummary: string | null): SummarySplit {
  const t = content.trimStart();
  if (previousSummary !== null) {
    const known = summaryText(previousSummary);
    if (t.startsWith(known)) {
      const rest = t.slice(known.length);
      if (rest === '') return { body: previousSummary, own: '' };
      if (rest.startsWith('\n\n')) return { body: previousSummary, own: rest.slice(2) };
    }
  }
  return { body: normalizeSummaryBody(t), own: '' };
}

/** Body and own content of a summary message (§8.5.1); null when the message is not a summary message. */
export function splitSummaryMessage(message: ChatMessage, previousSummary: string | null): SummarySplit | null {
  if (!isSummaryMessage(message)) return null;
  const content = message.content;
  if (typeof content === 'string') return splitStringSummary(content, previousSummary);
  const parts = content as ContentPart[];
  return {
    body: normalizeSummaryBody(partText(parts[0] as Extract<ContentPart, { type: 'text' }>)),
    own: parts.slice(1),
  };
}

/** Content that is not summary: the whole content of an ordinary row, the own content of a summary row. */
export function ownContent(message: ChatMessage, previousSummary: string | null): MessageContent {
  const split = splitSummaryMessage(message, previousSummary);
  return split === null ? message.content : split.own;
}

/** Own text (§1.3): the text of the own content. */
export function ownText(message: ChatMessage, previousSummary: string | null): string {
  return contentText(ownContent(message, previousSummary));
}

function startsWithSyntheticPrefix(text: string): boolean {
  for (const prefix of SYNTHETIC_USER_PREFIXES) if (prefix !== '' && text.startsWith(prefix)) return true;
  return false;
}

/** Real user message (§1.3 rules 1–4, §18.2). */
export function isRealUserMessage(message: ChatMessage, previousSummary: string | null): boolean {
  if (message.role !== 'user') return false;
  const split = splitSummaryMessage(message, previousSummary);
  const content = split === null ? message.content : split.own;
  const text = contentText(content);
  if (split !== null && text === '') return false;
  if (text.trim() === '' && !hasImagePart(content)) return false;
  return !startsWithSyntheticPrefix(text);
}

/** Index of the latest real user message at or after `from`, or -1. */
export function findLatestRealUserIndex(
  messages: readonly ChatMessage[],
  previousSummary: string | null,
  from = 0,
): number {
  for (let i = messages.length - 1; i >= from; i--) {
    const m = messages[i];
    if (m !== undefined && isRealUserMessage(m, previousSummary)) return i;
  }
  return -1;
}
