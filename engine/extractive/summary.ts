// The extractive, identifier-preserving summariser (issue #15 §2; SPEC §19 `compression.summary_backend:
// extractive`): fills the §8.5.5 template from the window itself, without any model, within the §6.2 budget.
// Goal and on-topic requests; constraints and preferences; decisions with their reasons, earlier decisions that a
// later one overrides stated as superseded; work done; what is open; and every identifier, ranked. The sentences of
// one message that go to one item stay together (the goal message's statements, a message's decision clauses);
// what the user later drops by name is never stated as current. An iterative update keeps the previous summary's
// items unless the window supersedes them. Pure and deterministic.
import { stripArchivePointer } from '../archivePointer.js';
import { contentText, hasToolCalls } from '../messages.js';
import { classifyWindow } from '../summaryPrompt.js';
import { cutWithSuffix } from '../text.js';
import type { ChatMessage, ToolCall } from '../types.js';
import { fitBudget } from './budget.js';
import { hasIdentifier, IdentifierRanking } from './identifiers.js';
import { DeferredItemList, ItemList, packSentences } from './itemList.js';
import { emptySections, parseSections, type SummarySections } from './sections.js';
import {
  contentTokens,
  ERROR_PATTERN,
  isAside,
  isConstraint,
  isDecision,
  isDropOnly,
  isFix,
  isOverride,
  isQuestion,
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

const RESULT_LIMIT = 160;
const PATH_KEYS = ['path', 'file_path', 'filepath', 'file', 'filename'] as const;
const WRITING_TOOL = /write|edit|create|patch|apply|save|replace|insert|mkdir|move|rename|delete/i;
const COMMAND_KEYS = ['command', 'cmd', 'script'] as const;

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
  lists: Record<'goal' | 'user' | 'constraints' | 'blocked' | 'files' | 'next', ItemList>;
  /** Work done: the lowest-value section after the identifiers, listed only if the budget can keep some of it. */
  done: DeferredItemList;
  decisions: ItemList;
  superseded: ItemList;
  /** What the user's dropping clauses name ("The Redis plan is off the table" → redis), by user message. */
  drops: { words: string[]; message: number }[];
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
      blocked: new ItemList(sections.blocked),
      files: new ItemList(sections.files),
      next: new ItemList([]),
    },
    done: new DeferredItemList(sections.done),
    decisions: new ItemList(sections.decisions),
    superseded: new ItemList(sections.superseded),
    drops: [],
    ranking,
  };
}

const DROP_WORDS = new Set(
  'scratch forget ignore earlier instruction instructions everything said far total reset table plan plans longer drop dropped abandon abandoned cancel cancelled idea'.split(
    ' ',
  ),
);

/** The words a dropping clause names ("Forget the Redis cache" → redis, cache). */
const namedWords = (clause: string): string[] => contentTokens(clause).filter((token) => !DROP_WORDS.has(token));

/** A dropping clause that names what is dropped ("Forget the Redis cache"), not just "scratch that". */
function namesSomething(clause: string): boolean {
  return namedWords(clause).length > 0 || hasIdentifier(clause);
}

/**
 * A statement of user message `message` (-1: of the previous summary) that is mostly what a dropping clause of the
 * same or a later message names ("Approach: Redis caching." then "The Redis caching plan is off the table"): no
 * longer current, and already stated as superseded by that clause. A statement that names more than it keeps
 * ("Build the API with Redis caching and Postgres") stays.
 */
function isDropped(state: WindowState, text: string, message: number): boolean {
  if (state.drops.length === 0) return false;
  const words = new Set(contentTokens(text));
  return state.drops.some(
    (d) => d.message >= message && d.words.length * 2 >= words.size && d.words.every((w) => words.has(w)),
  );
}

/** Classifies a user message's sentences; decisions are applied in order (an override supersedes earlier ones). */
function readUserMessage(text: string, message: number, state: WindowState, out: UserSentence[]): void {
  const sentences = splitSentences(text);
  const decided: string[] = [];
  const dropped: string[] = [];
  let overrides = false;
  // Where the message's decision goes among its sentences: at its first decision clause.
  let decisionAt = -1;
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
        if (namesSomething(clause)) {
          dropped.push(clause);
          const words = namedWords(clause);
          if (words.length > 0) state.drops.push({ words, message });
        }
      } else if (isDecision(clause) && !isQuestion(sentence)) {
        const next = sentences[i + 1];
        decided.push(
          next !== undefined && isReason(next) && !isDecision(next) ? `${clause} (reason: ${next})` : clause,
        );
        decisionHere = true;
        if (decisionAt < 0) decisionAt = out.length;
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
  // The message's decision clauses are one decision ("Let's swap the approach. Use X instead."): apart, the clause
  // that names what changes and the one that names the new choice lose each other.
  const decisions = packSentences(decided);
  for (const d of decisions) state.decisions.push(d);
  if (decisions.length > 0)
    out.splice(decisionAt, 0, ...decisions.map((d) => ({ text: d, kind: 'decision' as const, message })));
}

/** An assistant sentence that is not an error is work done when it reports work or names an identifier. */
const reportsWork = (sentence: string): boolean => isWorkReport(sentence) || hasIdentifier(sentence);

function readAssistantMessage(row: ChatMessage, state: WindowState, toolNames: Map<string, string>): void {
  for (const sentence of splitSentences(contentText(row.content))) {
    if (ERROR_PATTERN.test(sentence) && !isFix(sentence)) state.lists.blocked.push(sentence);
    else state.done.push(sentence, reportsWork);
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
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.length > 0) return cutWithSuffix(trimmed, RESULT_LIMIT);
  }
  return '';
}

function firstErrorLine(text: string): string | undefined {
  for (const line of text.split('\n')) if (ERROR_PATTERN.test(line)) return line;
  return undefined;
}

/** Whether `text` has a content token in `vocabulary`. */
function sharesToken(text: string, vocabulary: ReadonlySet<string>): boolean {
  for (const token of contentTokens(text)) if (vocabulary.has(token)) return true;
  return false;
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
      const errorLine = firstErrorLine(text);
      if (errorLine && !isFix(text)) {
        openErrors.set(name, `${name}: ${cutWithSuffix(errorLine.trim(), RESULT_LIMIT)}`);
      } else {
        openErrors.delete(name);
        state.done.push(`${name} → ${result || '(no output)'}`);
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
  // Nor is one that the window drops by name (the dropping clause is listed as superseded).
  const kept = state.lists.goal.items.filter(
    (g) => (!state.superseded.has(g) || state.decisions.has(g)) && !isDropped(state, g, -1),
  );
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
  const onTopic = (t: string) => vocabulary.size === 0 || hasIdentifier(t) || sharesToken(t, vocabulary);
  // The goal message's statements and requests stay together, in runs of whole sentences (a run ends at a
  // decision, which is its own item so that a later override can take it out of the goal).
  let goalRun: string[] = [];
  const endGoalRun = () => {
    for (const item of packSentences(goalRun)) state.lists.goal.push(item);
    goalRun = [];
  };
  for (const u of userSentences) {
    if (u.kind === 'constraint') state.lists.constraints.push(u.text);
    if (u.kind === 'decision' && u.message === goalMessage && statesGoal(u)) {
      endGoalRun();
      state.lists.goal.push(u.text);
    }
    if (u.kind !== 'statement' && u.kind !== 'request') continue;
    if (isDropped(state, u.text, u.message)) {
      // What a later clause drops by name is neither the goal nor a current statement; the clause says it is dropped.
      if (u.message === goalMessage) endGoalRun();
    } else if (u.message === goalMessage) goalRun.push(u.text);
    else if (onTopic(u.text)) state.lists.user.push(`User ${u.kind === 'request' ? 'asked' : 'said'}: ${u.text}`);
  }
  endGoalRun();
  for (const e of openErrors.values()) state.lists.blocked.push(e);
  const open = lastUserRequest as { text: string; answered: boolean } | null;
  if (open && !open.answered && onTopic(open.text)) state.lists.next.push(`Answer: ${open.text}`);

  const sections: SummarySections = {
    goal: state.lists.goal.items,
    user: state.lists.user.items,
    constraints: state.lists.constraints.items,
    done: [],
    inProgress: [],
    blocked: state.lists.blocked.items,
    decisions: state.decisions.items,
    superseded: state.superseded.items.filter((d) => !state.decisions.has(d)),
    files: state.lists.files.items,
    nextSteps: state.lists.next.items,
    critical: [],
  };
  return fitBudget(sections, input.budgetTokens, {
    done: () => state.done.items(),
    critical: () => state.ranking.rank(),
  });
}
