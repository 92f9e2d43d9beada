// Rough token estimation (SPEC §3). Hot path: compress() estimates every message, so the ASCII case is a
// single scan without allocation and the non-ASCII case walks code points once.
import { IMAGE_PART_TOKENS, MESSAGE_OVERHEAD_TOKENS } from './constants.js';
import { estimateJsonTokensRough } from './jsonTokens.js';
import type { ChatMessage } from './types.js';

function isOneTokenCodePoint(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x11ff) ||
    (cp >= 0x2e80 && cp <= 0x9fff) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7af) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xff00 && cp <= 0xffef)
  );
}

function utf8Length(cp: number): number {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

/** SPEC §3.1 in parts: UTF-8 bytes of the code points that are not one token each, and the count of those that are. */
export interface RoughSize {
  bytes: number;
  cjk: number;
}

/** Adds the parts of `text[from…]` to `size` (`sign` −1 takes them away). */
function walk(text: string, from: number, size: RoughSize, sign: number): void {
  const len = text.length;
  let i = from;
  let bytes = 0;
  let cjk = 0;
  while (i < len) {
    const cp = text.codePointAt(i) as number;
    i += cp > 0xffff ? 2 : 1;
    if (isOneTokenCodePoint(cp)) cjk++;
    else bytes += utf8Length(cp);
  }
  size.bytes += sign * bytes;
  size.cjk += sign * cjk;
}

/** Adds the SPEC §3.1 parts of `text` to `size`, or takes them away (`sign` −1): a text's estimate in pieces. */
export function addRoughSize(size: RoughSize, text: string, sign: 1 | -1 = 1): void {
  // The regex finds where the walk must start faster than a charCodeAt loop over texts built by concatenation. It
  // stops at a control character other than tab and line breaks too: the walk counts that one byte alike.
  const i = text.search(WALK_FROM);
  size.bytes += sign * (i < 0 ? text.length : i);
  if (i >= 0) walk(text, i, size, sign);
}

/** A character other than printable ASCII, tab, line feed and carriage return. */
const WALK_FROM = /[^\t\n\r -~]/;

/** The SPEC §3.1 estimate of a text of this size. */
export function roughTokensOfSize(size: RoughSize): number {
  return size.cjk + Math.ceil(size.bytes / 4);
}

/** SPEC §3.1. */
export function estimateTokensRough(text: string): number {
  if (typeof text !== 'string' || text.length === 0) return 0;
  const len = text.length;
  let i = 0;
  while (i < len && text.charCodeAt(i) < 0x80) i++;
  if (i === len) return Math.ceil(len / 4);
  // Mixed: i ASCII bytes so far, then walk the rest by code point. The walk of `addRoughSize` in line, without its
  // size object: this is the compressor's hot path.
  let bytes = i;
  let cjk = 0;
  while (i < len) {
    const cp = text.codePointAt(i) as number;
    i += cp > 0xffff ? 2 : 1;
    if (isOneTokenCodePoint(cp)) cjk++;
    else bytes += utf8Length(cp);
  }
  return cjk + Math.ceil(bytes / 4);
}

/**
 * estimateTokensRough(JSON.stringify(message)), without building the JSON text. Not memoised: a per-object cache
 * (WeakMap) cost more on fresh transcripts than it saved, and compress() estimates each input row once.
 */
export function estimateMessageTokensRough(message: ChatMessage): number {
  return estimateJsonTokensRough(message);
}

/** SPEC §3.2. */
export function estimateMessagesTokensRough(messages: readonly ChatMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateJsonTokensRough(m);
  return total;
}

/** `estimateMessagesTokensRough(messages) > limit`, estimating only as many rows as needed to decide. */
export function messagesTokensExceed(messages: readonly ChatMessage[], limit: number): boolean {
  let total = 0;
  for (const m of messages) {
    total += estimateJsonTokensRough(m);
    if (total > limit) return true;
  }
  return total > limit;
}

/** Per-message cost for the tail walk (SPEC §3.3). */
export function messageCost(m: ChatMessage): number {
  let cost = MESSAGE_OVERHEAD_TOKENS;
  const content = m.content;
  if (typeof content === 'string') cost += estimateTokensRough(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (part && part.type === 'text') cost += estimateTokensRough(part.text);
      else if (part && part.type === 'image_url') cost += IMAGE_PART_TOKENS;
    }
  }
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls) cost += estimateTokensRough(JSON.stringify(call));
  }
  return cost;
}
