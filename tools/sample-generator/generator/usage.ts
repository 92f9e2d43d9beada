// Provider usage for the sample transcripts. The readings are those of the agent that produced the session: a
// model with a given window whose own compaction (at the threshold) shrank its prompt, so `prompt_tokens` grows
// turn by turn, falls back after each of those compactions and grows again — as in a real long session.
import type { ChatMessage, Usage } from '../../../engine/index.js';
import { estimateMessageTokensRough } from '../../../engine/index.js';
import type { Rng } from './random.js';

export interface TranscriptLine {
  message: ChatMessage;
  usage?: Usage;
}

export interface UsagePlan {
  /** Tokens of the prompt outside the transcript (tool schemas, provider framing). */
  overheadTokens: number;
  /** The recording agent compacted its context when a reading reached this. */
  compactAtTokens: number;
  /** Messages kept at the start by the recording agent's compaction. */
  headMessages: number;
  /** Tokens of recent messages kept by its compaction. */
  tailTokens: number;
  /** Size of the summary its compaction inserted. */
  summaryTokens: number;
  /** Real tokenizer count relative to the rough estimate (4 chars per token). */
  tokenizerRatio: number;
  /** Chance that an assistant message reports usage (besides the first answer of a turn, when `turnStarts`). */
  usageChance: number;
  /** Whether the first answer after a user message always reports usage. */
  turnStarts: boolean;
}

export function attachUsage(messages: readonly ChatMessage[], plan: UsagePlan, rng: Rng): TranscriptLine[] {
  const lines: TranscriptLine[] = [];
  let context: number[] = [];
  let contextTokens = 0;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as ChatMessage;
    const size = estimateMessageTokensRough(message);
    const line: TranscriptLine = { message };
    if (message.role === 'assistant') {
      const jitter = 1 + (rng.next() - 0.5) * 0.006;
      const prompt = Math.round((plan.overheadTokens + contextTokens) * plan.tokenizerRatio * jitter);
      const opensTurn = plan.turnStarts && messages[i - 1]?.role === 'user';
      const compactsNow = prompt >= plan.compactAtTokens;
      if (opensTurn || compactsNow || rng.chance(plan.usageChance)) {
        const completion = Math.max(1, Math.round(size * plan.tokenizerRatio));
        line.usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
      }
      context.push(size);
      contextTokens += size;
      if (compactsNow) {
        // head + summary + the newest messages that fit the tail budget
        const head = context.slice(0, plan.headMessages);
        const tail: number[] = [];
        let tailTokens = 0;
        for (let j = context.length - 1; j >= plan.headMessages; j--) {
          const t = context[j] as number;
          if (tailTokens + t > plan.tailTokens && tail.length > 0) break;
          tail.unshift(t);
          tailTokens += t;
        }
        context = [...head, plan.summaryTokens, ...tail];
        contextTokens = context.reduce((a, b) => a + b, 0);
      }
    } else {
      context.push(size);
      contextTokens += size;
    }
    lines.push(line);
  }
  return lines;
}
