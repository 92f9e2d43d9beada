// The compactors of `npm run bench:quality` (issue #15 §1): ours through the engine's phase functions (each summary
// backend, head protected or not) beside three baselines without a summary. Each gets the case's working transcript
// (compactbench's turns) and its own previous result, and returns the artifact text the answerer reads.
import {
  ARCHIVE_POINTER_MARKER,
  archivePointerLine,
  buildExtractiveSummaryBody,
  buildFallbackSummary,
  type ChatMessage,
  computeSummaryBudget,
  estimateMessagesTokensRough,
  estimateTokensRough,
  isSummaryMessage,
  messageText,
  planCompaction,
  prunePhase,
  reassemblePhase,
  SUMMARY_PREFIX,
  withArchivePointer,
} from '../../engine/index.js';

export interface Turn {
  id: number;
  role: 'user' | 'assistant' | 'system';
  content: string;
}

/** What a compactor keeps between drift cycles (compactbench's `method_metadata`). */
export interface CarriedState {
  messages: ChatMessage[];
  turnsSeen: number;
  previousSummary: string | null;
}

/**
 * Tokens (SPEC §3 estimate) of one cycle: the transcript, the kept content, the fixed lines counted apart; and, to
 * show what bounds the kept share, the transcript's last TAIL messages (what every compactor with a tail keeps
 * verbatim) and the summary's §8.5.5 heading lines (part of the kept content).
 */
export interface CycleTokens {
  transcript: number;
  kept: number;
  fixed: number;
  tail: number;
  headings: number;
}

export interface CompactResult {
  text: string;
  metadata: CarriedState & { tokens: CycleTokens };
}

type Backend = 'fallback' | 'extractive';

interface OursVariant {
  kind: 'ours';
  backend: Backend;
  protectFirstN: number;
  archivePointer: boolean;
}

type BaselineVariant = { kind: 'keep' } | { kind: 'slice'; first: number; last: number };

export interface CompactorDefinition {
  key: string;
  label: string;
  variant: OursVariant | BaselineVariant;
}

/** The bench's context length: the smallest the host accepts (SPEC §4.4); it sets the §6.2 summary budget. */
const CONTEXT_LENGTH = 64_000;
/** Tail kept verbatim by every compactor that keeps one (the engine's hard minimum, like last-4). */
const TAIL = 4;
const BENCH_CONVERSATION_ID = 'bench-conversation';

function ours(backend: Backend, headProtected: boolean): CompactorDefinition {
  const name =
    backend === 'fallback'
      ? 'ours, §9.5 fallback (local without provider before #15)'
      : 'ours, extractive (local without provider now)';
  return {
    key: `ours-${backend}-${headProtected ? 'head' : 'nohead'}`,
    label: `${name}, head ${headProtected ? 'protected' : 'not protected'}`,
    // The archive pointer comes with the extractive rows; the fallback rows are the behaviour before issue #15.
    variant: { kind: 'ours', backend, protectFirstN: headProtected ? 3 : 0, archivePointer: backend === 'extractive' },
  };
}

export const COMPACTORS: readonly CompactorDefinition[] = [
  ours('fallback', true),
  ours('fallback', false),
  ours('extractive', true),
  ours('extractive', false),
  { key: 'keep-everything', label: 'keep everything', variant: { kind: 'keep' } },
  {
    key: 'first3-last4',
    label: 'first 3 + last 4 messages, no summary',
    variant: { kind: 'slice', first: 3, last: 4 },
  },
  { key: 'last4', label: 'last 4 messages, no summary', variant: { kind: 'slice', first: 0, last: 4 } },
];

function toMessages(turns: readonly Turn[]): ChatMessage[] {
  return turns.map((t) => ({ role: t.role, content: t.content }));
}

/** The lines the answerer reads; a summary contributes its body without the fixed prefix and pointer lines. */
function artifactLines(messages: readonly ChatMessage[]): string[] {
  const lines: string[] = [];
  for (const m of messages) {
    const text = messageText(m);
    if (isSummaryMessage(m)) {
      for (const line of text.split('\n')) {
        if (line === SUMMARY_PREFIX || line.startsWith(ARCHIVE_POINTER_MARKER) || line.trim() === '') continue;
        lines.push(line);
      }
    } else {
      lines.push(`[${m.role.toUpperCase()}]: ${text.replace(/\n+/g, ' ')}`);
    }
  }
  return lines;
}

const HEADING_LINE = /^#{2,3} /;

/** Tokens (SPEC §3) of the kept content and of its summary headings, and of the fixed lines (prefix, pointer). */
function keptTokens(messages: readonly ChatMessage[]): { kept: number; fixed: number; headings: number } {
  let kept = 0;
  let fixed = 0;
  let headings = 0;
  for (const line of artifactLines(messages)) kept += estimateTokensRough(line.replace(/^\[[A-Z]+\]: /, ''));
  for (const m of messages) {
    if (!isSummaryMessage(m)) continue;
    for (const line of messageText(m).split('\n')) if (HEADING_LINE.test(line)) headings += estimateTokensRough(line);
    fixed += estimateTokensRough(SUMMARY_PREFIX);
    if (messageText(m).includes(ARCHIVE_POINTER_MARKER))
      fixed += estimateTokensRough(archivePointerLine(BENCH_CONVERSATION_ID));
  }
  return { kept, fixed, headings };
}

function compactOurs(variant: OursVariant, messages: ChatMessage[], previousSummary: string | null) {
  const plan = planCompaction(messages, {
    protectFirstN: variant.protectFirstN,
    protectLastN: TAIL,
    minTailUserMessages: 1,
    tailTokenBudget: 1,
    previousSummary,
  });
  if (plan.noop !== false) return { output: messages, summary: previousSummary };
  const pruned = prunePhase(messages, plan).messages;
  const window = messages.slice(plan.headEnd, plan.cut);
  let body =
    variant.backend === 'fallback'
      ? buildFallbackSummary(messages, plan, { previousSummary, failureClass: 'error' })
      : buildExtractiveSummaryBody({
          window,
          previousSummary,
          budgetTokens: computeSummaryBudget(estimateMessagesTokensRough(window), CONTEXT_LENGTH),
        });
  if (variant.archivePointer) body = withArchivePointer(body, BENCH_CONVERSATION_ID);
  const output = reassemblePhase(pruned, messages, plan, body, { previousSummary });
  return { output, summary: body };
}

export function compact(key: string, turns: readonly Turn[], previous: CarriedState | null): CompactResult {
  const definition = COMPACTORS.find((c) => c.key === key);
  if (!definition) throw new Error(`unknown compactor ${key}`);
  const transcript = toMessages(turns);
  let output: ChatMessage[];
  let summary: string | null = null;
  const { variant } = definition;
  if (variant.kind === 'ours') {
    // Drift cycles: the previous compacted output plus the turns appended since (summary of a summary).
    const input = previous ? [...previous.messages, ...transcript.slice(previous.turnsSeen)] : transcript;
    ({ output, summary } = compactOurs(variant, input, previous?.previousSummary ?? null));
  } else if (variant.kind === 'keep') {
    output = transcript;
  } else {
    const head = transcript.slice(0, variant.first);
    output = [...head, ...transcript.slice(Math.max(head.length, transcript.length - variant.last))];
  }
  const tokensOf = (ts: readonly Turn[]) => ts.reduce((sum, t) => sum + estimateTokensRough(t.content), 0);
  const transcriptTokens = tokensOf(turns);
  return {
    text: artifactLines(output).join('\n'),
    metadata: {
      messages: output,
      turnsSeen: turns.length,
      previousSummary: summary,
      tokens: { transcript: transcriptTokens, tail: tokensOf(turns.slice(-TAIL)), ...keptTokens(output) },
    },
  };
}
