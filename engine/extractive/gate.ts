// The quality gate of LLM summaries (issue #15 §3), pure: what a summary of a window must keep — the window's pinned
// identifiers and the user's constraints, extracted as the extractive summariser reads them — the share of them a
// body keeps, the re-prompt that names the missing ones, and their deterministic addition under "Critical Context".
// The host (activities/compaction/summaryCall.ts) calls the model; nothing here does I/O.
import { stripArchivePointer } from '../archivePointer.js';
import { contentText, hasToolCalls } from '../messages.js';
import { classifyWindow } from '../summaryPrompt.js';
import { collapseWhitespace, cutWithSuffix } from '../text.js';
import type { ChatMessage, ToolCall } from '../types.js';
import { IdentifierRanking, identifiersIn } from './identifiers.js';
import { contentTokens, isConstraint, splitSentences } from './sentences.js';

/** What a summary of the window must keep. */
export interface GateItems {
  /** Identifiers the user wrote or a tool call used (paths, commands), ranked, at most PINNED_IDENTIFIER_LIMIT. */
  identifiers: string[];
  /** The user's constraint and preference sentences, in order, at most CONSTRAINT_LIMIT. */
  constraints: string[];
}

export const PINNED_IDENTIFIER_LIMIT = 24;
export const CONSTRAINT_LIMIT = 12;
const CONSTRAINT_CHARS = 400;
/** A user message is read up to this many characters (a pasted log is not a list of requirements). */
const USER_TEXT_LIMIT = 6_000;
/** Share of a constraint's content words a summary must contain for the constraint to count as kept. */
const CONSTRAINT_WORD_SHARE = 0.6;
const ARGUMENT_KEYS = ['path', 'file_path', 'filepath', 'file', 'filename', 'command', 'cmd', 'script'] as const;

function toolCallValues(row: ChatMessage): string[] {
  if (!hasToolCalls(row)) return [];
  const values: string[] = [];
  for (const call of row.tool_calls as ToolCall[]) {
    let args: unknown;
    try {
      args = JSON.parse(call?.function?.arguments ?? '');
    } catch {
      continue;
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) continue;
    for (const key of ARGUMENT_KEYS) {
      const value = (args as Record<string, unknown>)[key];
      if (typeof value === 'string' && value.trim().length > 0) values.push(cutWithSuffix(value.trim(), 200));
    }
  }
  return values;
}

/** The gate items of a compaction window (the rows `[headEnd, cut)`; merged summaries count by their own text). */
export function gateItems(window: readonly ChatMessage[], previousSummary: string | null): GateItems {
  const { turns } = classifyWindow(window, previousSummary);
  const ranking = new IdentifierRanking();
  const constraints: string[] = [];
  const seen = new Set<string>();
  for (const row of turns) {
    if (row.role === 'user') {
      const text = contentText(row.content).slice(0, USER_TEXT_LIMIT);
      ranking.add(text);
      for (const sentence of splitSentences(text)) {
        if (!isConstraint(sentence)) continue;
        const value = cutWithSuffix(collapseWhitespace(sentence), CONSTRAINT_CHARS);
        const key = value.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        constraints.push(value);
      }
    } else if (row.role === 'assistant') {
      for (const value of toolCallValues(row)) ranking.addValue(value);
    }
  }
  return {
    identifiers: ranking.rank().slice(0, PINNED_IDENTIFIER_LIMIT),
    constraints: constraints.slice(0, CONSTRAINT_LIMIT),
  };
}

/** A body as the gate reads it: lower case, whitespace collapsed, its content words. */
interface ReadBody {
  text: string;
  words: Set<string>;
}

function readBody(body: string): ReadBody {
  const text = collapseWhitespace(stripArchivePointer(body)).toLowerCase();
  return { text, words: new Set(contentTokens(text)) };
}

function keepsIdentifier(body: ReadBody, identifier: string): boolean {
  return body.text.includes(collapseWhitespace(identifier).toLowerCase());
}

/** A constraint is kept when its identifiers are there and most of its content words (a paraphrase counts). */
function keepsConstraint(body: ReadBody, constraint: string): boolean {
  if (body.text.includes(collapseWhitespace(constraint).toLowerCase())) return true;
  if (!identifiersIn(constraint).every((id) => keepsIdentifier(body, id))) return false;
  const words = [...new Set(contentTokens(constraint))];
  if (words.length === 0) return true;
  const kept = words.filter((w) => body.words.has(w)).length;
  return kept / words.length >= CONSTRAINT_WORD_SHARE;
}

/** The items a body leaves out. */
export function missingGateItems(body: string, items: GateItems): GateItems {
  const read = readBody(body);
  return {
    identifiers: items.identifiers.filter((id) => !keepsIdentifier(read, id)),
    constraints: items.constraints.filter((c) => !keepsConstraint(read, c)),
  };
}

export function gateItemCount(items: GateItems): number {
  return items.identifiers.length + items.constraints.length;
}

/** Share of the items a body keeps, in [0, 1]; 1 when there is nothing to keep. */
export function retentionShare(body: string, items: GateItems): number {
  const total = gateItemCount(items);
  if (total === 0) return 1;
  return (total - gateItemCount(missingGateItems(body, items))) / total;
}

const CONSTRAINT_LABEL = 'User constraint: ';
const FILLER = /^[-*]?\s*\(?(none|none recorded|not recorded|unknown|nothing recorded)\)?\.?$/i;

function itemLines(missing: GateItems): string[] {
  return [
    ...missing.constraints.map((c) => `- ${CONSTRAINT_LABEL}${c}`),
    ...missing.identifiers.map((id) => `- \`${id}\``),
  ];
}

/** The block added to the summary prompt for the one re-prompt: the draft and the items it left out. */
export function gateRepromptBlock(draft: string, missing: GateItems): string {
  return [
    'QUALITY CHECK: the summary you wrote (below) leaves out items that a different assistant needs. Write the ' +
      'complete summary again, in the same structure, starting with `## Goal`, and keep every item listed here — ' +
      'identifiers exactly as written, constraints in their meaning — in the section where it belongs (identifiers ' +
      'you cannot place go under "## Critical Context").',
    `MISSING ITEMS:\n${itemLines(missing).join('\n')}`,
    `YOUR SUMMARY:\n${draft}`,
  ].join('\n\n');
}

/**
 * The body with the missing items appended at the end of its "## Critical Context" section (the section is added at
 * the end when the body has none). Deterministic: constraints first, then identifiers, in their ranked order.
 */
export function appendToCriticalContext(body: string, missing: GateItems): string {
  const lines = itemLines(missing);
  if (lines.length === 0) return body;
  const rows = body.split('\n');
  const start = rows.findIndex((row) => /^##\s+Critical Context\s*$/i.test(row.trim()));
  if (start < 0) return `${body.trimEnd()}\n## Critical Context\n${lines.join('\n')}`;
  let end = rows.length;
  for (let i = start + 1; i < rows.length; i++) {
    if (/^##\s/.test(rows[i] as string)) {
      end = i;
      break;
    }
  }
  // A section that only said "(none)" now has items: the filler goes.
  const section = rows.slice(start + 1, end).filter((row) => row.trim() !== '' && !FILLER.test(row.trim()));
  return [...rows.slice(0, start + 1), ...section, ...lines, ...rows.slice(end)].join('\n').trimEnd();
}
