// The one deterministic answerer of `npm run bench:quality` (issue #15 §1): it answers compactbench's prompts from
// the artifact in the prompt only, by quoting the artifact line whose statements share the most normalised words
// with the question (ties: the later line, the newer information). A line's role label (`[USER]: `) is layout, not
// words, and its questions do not answer one, so neither counts; the same rule for every compactor. It cannot
// reason: it never negates, combines or infers.
import { contentTokens, splitSentences } from '../../engine/extractive/sentences.js';

const CONTEXT_START = 'You have the following summary of a prior conversation:\n\n';
const EVALUATION_END = '\n\nBased only on this summary';
const CONTINUATION_END = '\n\nThe user now says:';

function between(text: string, start: string, end: string): string | null {
  const from = text.indexOf(start);
  if (from < 0) return null;
  const to = text.indexOf(end, from + start.length);
  return to < 0 ? null : text.slice(from + start.length, to);
}

const stem = (token: string): string => token.replace(/(?:ing|ed|es|s)$/, '');

function words(text: string): Set<string> {
  return new Set(contentTokens(text).map(stem));
}

/** The question of an evaluation prompt, or the user's line of a drift-cycle continuation prompt. */
function questionOf(prompt: string): string {
  const question = /QUESTION: ([\s\S]*?)\n\nANSWER:/.exec(prompt);
  if (question) return question[1] as string;
  const user = /USER: ([\s\S]*?)\n\nRespond as the assistant/.exec(prompt);
  return user ? (user[1] as string) : '';
}

const ROLE_LABEL = /^\[[A-Z]+\]: /;

/** The line without its role label and without its questions: a question does not answer one. */
function statementsOf(line: string): string {
  return splitSentences(line.replace(ROLE_LABEL, ''))
    .filter((s) => !/[?？]$/.test(s))
    .join(' ');
}

const NOT_CONTENT = /^(SUMMARY:|STRUCTURED STATE:|#{1,3} |- \(none\)$)/;

export function answer(prompt: string): string {
  const context = between(prompt, CONTEXT_START, EVALUATION_END) ?? between(prompt, CONTEXT_START, CONTINUATION_END);
  if (context === null) return "I don't know.";
  const asked = words(questionOf(prompt));
  let best: string | null = null;
  let bestScore = 0;
  for (const raw of context.split('\n')) {
    const line = raw.trim();
    if (line.length === 0 || NOT_CONTENT.test(line)) continue;
    let score = 0;
    for (const w of words(statementsOf(line))) if (asked.has(w)) score++;
    if (score > 0 && score >= bestScore) {
      best = line;
      bestScore = score;
    }
  }
  if (best === null) return "I don't know.";
  return best.replace(ROLE_LABEL, '').replace(/^- /, '');
}
