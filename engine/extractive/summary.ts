// The extractive, identifier-preserving summariser (issue #15 §2; SPEC §19 `compression.summary_backend:
// extractive`): fills the §8.5.5 template from the window itself, without any model, within the §6.2 budget.
// Goal and on-topic requests; constraints and preferences; decisions with their reasons, earlier decisions that a
// later one overrides stated as superseded; work done; what is open; and every identifier, ranked. An iterative
// update keeps the previous summary's items unless the window supersedes them. Pure and deterministic.
import { stripArchivePointer } from '../archivePointer.js';
import { contentText, hasToolCalls } from '../messages.js';
import { classifyWindow } from '../summaryPrompt.js';
import { collapseWhitespace, cutWithSuffix } from '../text.js';
import { estimateTokensRough } from '../tokens.js';
import type { ChatMessage, ToolCall } from '../types.js';
import { hasIdentifier, IdentifierRanking } from './identifiers.js';
import { emptySections, parseSections, renderSections, type SummarySections } from './sections.js';
import {
  contentTokens,
  ERROR_PATTERN,
  isAside,
  isConstraint,
  isDecision,
  isDropOnly,
  isFix,
  isOverride,
  isQuestionOrRequest,
  isReason,
  isWorkReport,
  splitClauses,
  splitSentences,
} from './sentences.js';

export interface ExtractiveSummaryInput {
  /** The window rows `[headEnd, cut)` of the input (unpruned: tool output is read in full). */
  window: readonly ChatMessage[];
  /** The engine's previous summary, to split merged summaries (SPEC §8.5.1). */
  previousSummary: string | null;
  /** The §6.2 summary budget: the body is cut to fit it. */
  budgetTokens: number;
}

const ITEM_LIMIT = 400;
const RESULT_LIMIT = 160;
const PATH_KEYS = ['path', 'file_path', 'filepath', 'file', 'filename'] as const;
const WRITING_TOOL = /write|edit|create|patch|apply|save|replace|insert|mkdir|move|rename|delete/i;
const COMMAND_KEYS = ['command', 'cmd', 'script'] as const;

const item = (text: string): string => cutWithSuffix(collapseWhitespace(text), ITEM_LIMIT);

/** Items in order, each once (compared without case and spacing). */
class ItemList {
  readonly items: string[] = [];
  private readonly seen = new Set<string>();
  constructor(initial: readonly string[] = []) {
    for (const i of initial) this.push(i);
  }
  push(text: string): void {
    const value = item(text);
    const key = value.toLowerCase();
    if (value.length === 0 || this.seen.has(key)) return;
    this.seen.add(key);
    this.items.push(value);
  }
  has(text: string): boolean {
    return this.seen.has(item(text).toLowerCase());
  }
}

function parseArguments(call: ToolCall): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(call.function?.arguments ?? '');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

interface UserSentence {
  text: string;
  kind: 'constraint' | 'decision' | 'statement' | 'request';
  message: number;
}

interface WindowState {
  s: SummarySections;
  lists: Record<'goal' | 'user' | 'constraints' | 'done' | 'blocked' | 'files' | 'next', ItemList>;
  decisions: ItemList;
  superseded: ItemList;
  ranking: IdentifierRanking;
}

function startState(previous: string | null): WindowState {
  const { sections, criticalText } =
    previous === null ? { sections: emptySections(), criticalText: '' } : parseSections(stripArchivePointer(previous));
  const ranking = new IdentifierRanking();
  // The previous summary's identifiers keep their rank ahead of new ones of equal count.
  if (criticalText) ranking.add(criticalText, 2);
  return {
    s: sections,
    lists: {
      goal: new ItemList(sections.goal),
      user: new ItemList(sections.user),
      constraints: new ItemList(sections.constraints),
      done: new ItemList(sections.done),
      blocked: new ItemList(sections.blocked),
      files: new ItemList(sections.files),
      next: new ItemList([]),
    },
    decisions: new ItemList(sections.decisions),
    superseded: new ItemList(sections.superseded),
    ranking,
  };
}

const DROP_WORDS = new Set(
  'scratch forget ignore earlier instruction instructions everything said far total reset table plan plans longer drop dropped abandon abandoned cancel cancelled idea'.split(
    ' ',
  ),
);

/** A dropping clause that names what is dropped ("Forget the Redis cache"), not just "scratch that". */
function namesSomething(clause: string): boolean {
  return contentTokens(clause).some((t) => !DROP_WORDS.has(t)) || hasIdentifier(clause);
}

/** Classifies a user message's sentences; decisions are applied in order (an override supersedes earlier ones). */
function readUserMessage(text: string, message: number, state: WindowState, out: UserSentence[]): void {
  const sentences = splitSentences(text);
  const decided: string[] = [];
  const dropped: string[] = [];
  let overrides = false;
  for (let i = 0; i < sentences.length; i++) {
    const sentence = sentences[i] as string;
    if (isConstraint(sentence)) {
      // "That is a hard red line", "let's not do that": the sentence before names what "that" is.
      const referential = i > 0 && /\b(that|this|it)\b/i.test(sentence) && sentence.length < 80;
      const last = out.at(-1);
      if (referential && last?.message === message && last.text.endsWith(sentences[i - 1] as string)) {
        last.text = `${last.text} ${sentence}`;
        last.kind = 'constraint';
      } else {
        out.push({ text: referential ? `${sentences[i - 1]} ${sentence}` : sentence, kind: 'constraint', message });
      }
      continue;
    }
    let decisionHere = false;
    for (const clause of splitClauses(sentence)) {
      if (isOverride(clause)) overrides = true;
      if (isDropOnly(clause)) {
        if (namesSomething(clause)) dropped.push(clause);
      } else if (isDecision(clause)) {
        const next = sentences[i + 1];
        decided.push(
          next !== undefined && isReason(next) && !isDecision(next) ? `${clause} (reason: ${next})` : clause,
        );
        decisionHere = true;
      }
    }
    if (decisionHere || isOverride(sentence)) continue;
    if (isAside(sentence) && !hasIdentifier(sentence)) continue;
    out.push({ text: sentence, kind: isQuestionOrRequest(sentence) ? 'request' : 'statement', message });
  }
  if (decided.length > 0 && overrides) {
    for (const d of state.decisions.items) state.superseded.push(d);
    state.decisions = new ItemList();
  }
  for (const d of dropped) state.superseded.push(d);
  for (const d of decided) {
    state.decisions.push(d);
    out.push({ text: d, kind: 'decision', message });
  }
}

function readAssistantMessage(row: ChatMessage, state: WindowState, toolNames: Map<string, string>): void {
  for (const sentence of splitSentences(contentText(row.content))) {
    if (ERROR_PATTERN.test(sentence) && !isFix(sentence)) state.lists.blocked.push(sentence);
    else if (isWorkReport(sentence) || hasIdentifier(sentence)) state.lists.done.push(sentence);
  }
  if (!hasToolCalls(row)) return;
  for (const call of row.tool_calls as ToolCall[]) {
    const name = call?.function?.name ?? 'tool';
    if (call?.id) toolNames.set(call.id, name);
    const args = parseArguments(call);
    for (const key of PATH_KEYS) {
      const value = args[key];
      if (typeof value === 'string' && value.length > 0) {
        state.lists.files.push(`${value} (${WRITING_TOOL.test(name) ? 'written' : 'read'} by ${name})`);
        state.ranking.addValue(value);
      }
    }
    for (const key of COMMAND_KEYS) {
      const value = args[key];
      if (typeof value === 'string' && value.length > 0) state.ranking.addValue(cutWithSuffix(value, 200));
    }
  }
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim().length > 0) ?? '';
  return cutWithSuffix(line.trim(), RESULT_LIMIT);
}

/** The body of the extractive summary (SPEC §8.5.5 template), at most `budgetTokens` tokens (estimate, §3). */
export function buildExtractiveSummaryBody(input: ExtractiveSummaryInput): string {
  const { previous, turns } = classifyWindow(input.window, input.previousSummary);
  const state = startState(previous);
  const toolNames = new Map<string, string>();
  const userSentences: UserSentence[] = [];
  const openErrors = new Map<string, string>();
  let lastUserRequest: { text: string; answered: boolean } | null = null;

  turns.forEach((row, index) => {
    const text = contentText(row.content);
    state.ranking.add(text);
    if (row.role === 'user') {
      const from = userSentences.length;
      readUserMessage(text, index, state, userSentences);
      // This message's last request (its sentences are the ones just added; an earlier one may have grown).
      let request: UserSentence | undefined;
      for (let i = userSentences.length - 1; i >= Math.max(0, from - 1) && !request; i--) {
        const u = userSentences[i] as UserSentence;
        if (u.message === index && u.kind === 'request') request = u;
      }
      if (request) lastUserRequest = { text: request.text, answered: false };
    } else if (row.role === 'assistant') {
      if (lastUserRequest) (lastUserRequest as { answered: boolean }).answered = true;
      readAssistantMessage(row, state, toolNames);
    } else if (row.role === 'tool') {
      const name = toolNames.get(row.tool_call_id ?? '') ?? 'tool';
      const result = firstLine(text);
      const errorLine = text.split('\n').find((l) => ERROR_PATTERN.test(l));
      if (errorLine && !isFix(text)) {
        openErrors.set(name, `${name}: ${cutWithSuffix(errorLine.trim(), RESULT_LIMIT)}`);
      } else {
        openErrors.delete(name);
        state.lists.done.push(`${name} → ${result || '(no output)'}`);
      }
    }
  });

  // The goal: the first user message of the window that is not an aside (all its statements and requests).
  // On-topic vocabulary: the goal, constraints, decisions and the previous summary's goal and decisions.
  const vocabulary = new Set<string>();
  const addVocabulary = (t: string) => {
    for (const token of contentTokens(t)) vocabulary.add(token);
  };
  // A goal of the previous summary that was a decision the window superseded is no longer the goal (a superseded
  // decision is never stated as current).
  const kept = state.lists.goal.items.filter((g) => !state.superseded.has(g) || state.decisions.has(g));
  if (kept.length < state.lists.goal.items.length) state.lists.goal = new ItemList(kept);
  const hadGoal = state.lists.goal.items.length > 0;
  // A message that decides ("Let's plan the mobile launch with Vera.") states the goal too, while its decision is
  // current: without it, the first off-topic question after it would become the goal.
  const statesGoal = (u: UserSentence) =>
    u.kind === 'statement' || u.kind === 'request' || (u.kind === 'decision' && state.decisions.has(u.text));
  const goalMessage = hadGoal ? null : (userSentences.find(statesGoal)?.message ?? null);
  for (const u of userSentences) {
    if (u.kind !== 'statement' && u.kind !== 'request') addVocabulary(u.text);
    else if (u.message === goalMessage) addVocabulary(u.text);
  }
  for (const g of [...state.lists.goal.items, ...state.decisions.items, ...state.superseded.items]) addVocabulary(g);
  const onTopic = (t: string) =>
    vocabulary.size === 0 || hasIdentifier(t) || contentTokens(t).some((tok) => vocabulary.has(tok));
  for (const u of userSentences) {
    if (u.kind === 'constraint') state.lists.constraints.push(u.text);
    if (u.kind === 'decision' && u.message === goalMessage && statesGoal(u)) state.lists.goal.push(u.text);
    if (u.kind !== 'statement' && u.kind !== 'request') continue;
    if (u.message === goalMessage) state.lists.goal.push(u.text);
    else if (onTopic(u.text)) state.lists.user.push(`User ${u.kind === 'request' ? 'asked' : 'said'}: ${u.text}`);
  }
  for (const e of openErrors.values()) state.lists.blocked.push(e);
  const open = lastUserRequest as { text: string; answered: boolean } | null;
  if (open && !open.answered && onTopic(open.text)) state.lists.next.push(`Answer: ${open.text}`);

  const sections: SummarySections = {
    goal: state.lists.goal.items,
    user: state.lists.user.items,
    constraints: state.lists.constraints.items,
    done: state.lists.done.items,
    inProgress: [],
    blocked: state.lists.blocked.items,
    decisions: state.decisions.items,
    superseded: state.superseded.items.filter((d) => !state.decisions.has(d)),
    files: state.lists.files.items,
    nextSteps: state.lists.next.items,
    critical: state.ranking.rank(),
  };
  return fitBudget(sections, input.budgetTokens);
}

/** Lowest value first: identifiers ranked last, the oldest work reports, the oldest user statements. */
const TRIM_ORDER: readonly (keyof SummarySections)[] = ['critical', 'done', 'files', 'user', 'superseded', 'blocked'];

function fitBudget(sections: SummarySections, budgetTokens: number): string {
  const body = renderSections(sections);
  let tokens = estimateTokensRough(body);
  if (tokens <= budgetTokens) return body;
  for (const key of TRIM_ORDER) {
    const list = sections[key];
    // Identifiers are ranked: drop from the end; other lists are chronological: drop the oldest. Counted first,
    // removed at once (one item at a time from the front of a long list is quadratic).
    let dropped = 0;
    while (tokens > budgetTokens && dropped < list.length) {
      const removed = key === 'critical' ? list[list.length - 1 - dropped] : list[dropped];
      tokens -= estimateTokensRough(`- ${removed}\n`);
      dropped += 1;
    }
    if (key === 'critical') list.length -= dropped;
    else list.splice(0, dropped);
    if (tokens <= budgetTokens) break;
  }
  return renderSections(sections);
}
