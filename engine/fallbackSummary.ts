// Deterministic fallback summary (SPEC §9.5 with §18.5–§18.8): built without an LLM from the input's window.
import { contentText, hasToolCalls, isRealUserMessage, ownText } from './messages.js';
import { classifyWindow, serializeTurn } from './summaryPrompt.js';
import { codePointLength, collapseWhitespace, cutWithSuffix, firstCodePoints, longerThan } from './text.js';
import type { ChatMessage, ToolCall } from './types.js';

export type SummaryFailureClass = 'error' | 'empty' | 'cooldown';

export interface FallbackSummaryInput {
  /** The input's (unpruned) window rows `[headEnd, cut)`. */
  window: readonly ChatMessage[];
  /** The engine's previous summary, to read the own text of merged summaries (§8.5.1). */
  previousSummary: string | null;
  failureClass: SummaryFailureClass;
}

const GOAL_LIMIT = 500;
const REQUEST_LIMIT = 300;
const MAX_REQUESTS = 4;
const MAX_TOOL_NAMES = 12;
const TOOL_NAME_LIMIT = 64;
const ERROR_LINE_LIMIT = 200;
const MAX_ERROR_LINES = 5;
const MAX_PATHS = 12;
const PATH_LIMIT = 200;
const PREVIOUS_LIMIT = 3_000;
const LAST_ROWS = 8;
const LAST_ROW_TEXT_LIMIT = 700;
const BODY_LIMIT = 8_000;
export const FALLBACK_TRUNCATION_SUFFIX = '\n...[fallback summary truncated]';
const ERROR_LINE_PATTERN = /\b(error|exception|traceback|failed|failure|fatal)\b/i;
const PATH_ARGUMENT_KEYS = ['path', 'file_path', 'filepath', 'file', 'filename'] as const;
const NONE_RECORDED = '(none recorded)';

interface UserRequests {
  goal: string | null;
  earlier: string[];
}

/** `<G>` and `<R>`: each distinct request once; the newest 4 earlier ones, oldest first (§18.6). */
function collectUserRequests(window: readonly ChatMessage[], previousSummary: string | null): UserRequests {
  const seen = new Set<string>();
  const newestFirst: string[] = [];
  let goal: string | null = null;
  for (let i = window.length - 1; i >= 0 && newestFirst.length < MAX_REQUESTS; i--) {
    const row = window[i] as ChatMessage;
    if (!isRealUserMessage(row, previousSummary)) continue;
    const text = collapseWhitespace(ownText(row, previousSummary));
    if (goal === null) goal = cutWithSuffix(text, GOAL_LIMIT);
    else if (!seen.has(text)) newestFirst.push(cutWithSuffix(text, REQUEST_LIMIT));
    seen.add(text);
  }
  return { goal, earlier: newestFirst.reverse() };
}

function toolCallsOf(row: ChatMessage): ToolCall[] {
  return hasToolCalls(row) ? (row.tool_calls as ToolCall[]).filter((c) => c !== null && typeof c === 'object') : [];
}

/** Distinct tool names in first-use order, at most 12, each at most 64 characters. */
function collectToolNames(window: readonly ChatMessage[]): string[] {
  const names = new Set<string>();
  for (const row of window) {
    for (const call of toolCallsOf(row)) {
      const name = call.function?.name;
      if (typeof name === 'string' && name !== '') names.add(name);
      if (names.size >= MAX_TOOL_NAMES) return [...names].map((n) => cutWithSuffix(n, TOOL_NAME_LIMIT));
    }
  }
  return [...names].map((n) => cutWithSuffix(n, TOOL_NAME_LIMIT));
}

/** The line around the first pattern match is the first matching line (a match never spans a newline). */
function firstErrorLine(text: string): string | null {
  const at = text.search(ERROR_LINE_PATTERN);
  if (at < 0) return null;
  const start = text.lastIndexOf('\n', at) + 1;
  const newline = text.indexOf('\n', at);
  const line = text.slice(start, newline < 0 ? text.length : newline).trim();
  return cutWithSuffix(line, ERROR_LINE_LIMIT);
}

/** Newest 5 distinct error lines of the window's tool rows, oldest first (§18.7). */
function collectErrorLines(window: readonly ChatMessage[]): string[] {
  const seen = new Set<string>();
  const newestFirst: string[] = [];
  for (let i = window.length - 1; i >= 0 && newestFirst.length < MAX_ERROR_LINES; i--) {
    const row = window[i] as ChatMessage;
    if (row.role !== 'tool') continue;
    const line = firstErrorLine(contentText(row.content));
    if (line === null || seen.has(line)) continue;
    seen.add(line);
    newestFirst.push(line);
  }
  return newestFirst.reverse();
}

function parseArgumentsObject(args: unknown): Record<string, unknown> | null {
  if (typeof args !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(args);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** §9.5 paths (a): string values of the listed top-level argument keys, calls in order (§18.8). */
function argumentPaths(row: ChatMessage): string[] {
  const paths: string[] = [];
  for (const call of toolCallsOf(row)) {
    const args = parseArgumentsObject(call.function?.arguments);
    if (args === null) continue;
    for (const key of PATH_ARGUMENT_KEYS) {
      const value = args[key];
      if (typeof value === 'string' && value !== '') paths.push(value);
    }
  }
  return paths;
}

const EDGE_CHARS = `"'\`“”‘’()[]{}<>`;
const TRAILING_PUNCTUATION = '.,:;!?';
const FILE_SEGMENT = /\.[A-Za-z0-9]{1,8}$/;

/** Surrounding quotes, backticks and brackets (§18.8) and trailing `.,:;!?` removed. */
function stripToken(token: string): string {
  let start = 0;
  let end = token.length;
  while (start < end && EDGE_CHARS.includes(token.charAt(start))) start++;
  while (end > start) {
    const c = token.charAt(end - 1);
    if (!EDGE_CHARS.includes(c) && !TRAILING_PUNCTUATION.includes(c)) break;
    end--;
  }
  return token.slice(start, end);
}

function looksLikePath(token: string): boolean {
  if (!token.includes('/') || token.includes('://')) return false;
  const lastSegment = token.slice(token.lastIndexOf('/') + 1);
  return FILE_SEGMENT.test(lastSegment);
}

/** §9.5 paths (b): tokens of user/assistant (own) text, left to right. */
function textPaths(row: ChatMessage, previousSummary: string | null): string[] {
  if (row.role !== 'user' && row.role !== 'assistant') return [];
  const text = ownText(row, previousSummary);
  if (!text.includes('/')) return [];
  const paths: string[] = [];
  for (const raw of text.split(/\s+/)) {
    const token = stripToken(raw);
    if (looksLikePath(token)) paths.push(token);
  }
  return paths;
}

function collectPaths(window: readonly ChatMessage[], previousSummary: string | null): string[] {
  const paths = new Set<string>();
  for (const row of window) {
    for (const path of [...argumentPaths(row), ...textPaths(row, previousSummary)]) {
      paths.add(path);
      if (paths.size >= MAX_PATHS) return [...paths].map((p) => cutWithSuffix(p, PATH_LIMIT));
    }
  }
  return [...paths].map((p) => cutWithSuffix(p, PATH_LIMIT));
}

function bulletsOrNone(items: readonly string[]): string[] {
  return items.length > 0 ? items.map((item) => `- ${item}`) : [NONE_RECORDED];
}

function doneLines(toolNames: readonly string[], earlier: readonly string[]): string[] {
  const lines: string[] = [];
  if (toolNames.length > 0) lines.push(`- Called tool(s): ${toolNames.join(', ')}`);
  for (const request of earlier) lines.push(`- Earlier request: '${request}'`);
  return lines.length > 0 ? lines : ['(nothing recorded)'];
}

/** `<L>`: the last 8 rows of T, each text cut to 700 characters, one block per row joined with '\n'. */
function lastCompactedMessages(turns: readonly ChatMessage[]): string {
  const cut = (text: string) => cutWithSuffix(text, LAST_ROW_TEXT_LIMIT);
  return turns
    .slice(-LAST_ROWS)
    .map((row) => serializeTurn(row, cut))
    .join('\n');
}

function criticalContext(
  input: FallbackSummaryInput,
  previous: string | null,
  turns: readonly ChatMessage[],
): string[] {
  const lines = [
    `Summary generation was unavailable; this summary was assembled mechanically for ${input.window.length} compacted message(s). Failure class: ${input.failureClass}.`,
  ];
  if (previous !== null) lines.push('Previous summary (verbatim excerpt):', cutWithSuffix(previous, PREVIOUS_LIMIT));
  lines.push('Last compacted messages:', lastCompactedMessages(turns));
  return lines;
}

/** §9.5: at most 8,000 characters, the suffix included when cut. */
function limitBody(body: string): string {
  if (!longerThan(body, BODY_LIMIT)) return body;
  return firstCodePoints(body, BODY_LIMIT - codePointLength(FALLBACK_TRUNCATION_SUFFIX)) + FALLBACK_TRUNCATION_SUFFIX;
}

/** The fallback summary body of §9.5 (without SUMMARY_PREFIX). Never contains an error message. */
export function buildFallbackSummaryBody(input: FallbackSummaryInput): string {
  const { window, previousSummary } = input;
  const { previous, turns } = classifyWindow(window, previousSummary);
  const requests = collectUserRequests(window, previousSummary);
  const lines = [
    '## Goal',
    requests.goal === null ? 'User asked: (no user request in the compacted turns)' : `User asked: '${requests.goal}'`,
    '## Constraints & Preferences',
    '(not recorded)',
    '## Progress',
    '### Done',
    ...doneLines(collectToolNames(window), requests.earlier),
    '### In Progress',
    '(unknown)',
    '### Blocked',
    ...bulletsOrNone(collectErrorLines(window)),
    '## Key Decisions',
    '(not recorded)',
    '## Relevant Files',
    ...bulletsOrNone(collectPaths(window, previousSummary)),
    '## Next Steps',
    '- Continue from the messages after this summary; the newest user message takes priority.',
    '## Critical Context',
    ...criticalContext(input, previous, turns),
  ];
  return limitBody(lines.join('\n'));
}
