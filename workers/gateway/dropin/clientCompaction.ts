// How the gateway recognises a drop-in client's own compaction (issue #12 "Client-side compaction is recognised").
// Agents compact on their own: they send the history with a last user message that asks for a handoff/checkpoint
// summary and no tools (Codex CLI's "CONTEXT CHECKPOINT COMPACTION"), or tools with a prompt that forbids them
// (Claude Code's /compact), then continue with a shorter history that carries the summary they got. The first is
// passed through and recorded; the second, when it diverges from what is stored and holds that summary, continues
// the conversation as a new session (conversationFlow.ts). Pure.
import type { ChatMessage } from '../../../engine/types.js';

/** What agents ask for when they compact (matched in the last user message of a tool-less request). */
const COMPACTION_PROMPTS: readonly RegExp[] = [
  // Codex CLI (codex-rs core, the inline compaction prompt of custom providers).
  /\bCONTEXT CHECKPOINT COMPACTION\b/i,
  /\b(?:create|write|produce) a (?:detailed |concise )?handoff summary\b/i,
  // Claude Code's /compact and its automatic compaction.
  /\bcreate a detailed summary of the conversation so far\b/i,
  /\bsummari[sz]e (?:this|the) conversation so (?:that|another|it can)\b[^\n]*\b(?:continu|resum|pick up)/i,
];

/** The message's text (string content, or its text parts joined). */
export function textOf(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/**
 * A summary prompt that forbids tools: Claude Code's /compact offers the model its tools all the same (the request
 * keeps the conversation's prompt cache) and asks for text only.
 */
const TOOLS_FORBIDDEN = /\bdo not (?:call|use) any (?:other )?tools?\b|\brespond with text only\b/i;

/**
 * A request is the client's own compaction: its last message is a user's summary request, and it offers no tools or
 * forbids their use.
 */
export function isClientCompactionRequest(history: readonly ChatMessage[], toolsOffered: boolean): boolean {
  const last = history.at(-1);
  if (last?.role !== 'user') return false;
  const text = textOf(last);
  return COMPACTION_PROMPTS.some((prompt) => prompt.test(text)) && (!toolsOffered || TOOLS_FORBIDDEN.test(text));
}

/**
 * What a client carries of the summary it got (trimmed, non-empty): the reply itself, and what the reply's last
 * `<summary>` block holds — Claude Code keeps only that, and writes its own words around it.
 */
export function carriedSummaries(summary: string): string[] {
  const whole = summary.trim();
  const block = [...summary.matchAll(/<summary>([\s\S]*?)<\/summary>/gi)].at(-1)?.[1]?.trim();
  return [whole, ...(block && block !== whole ? [block] : [])].filter((needle) => needle !== '');
}

/**
 * The first message from `from` on that carries the client's summary (carriedSummaries, each at least `minLength`
 * characters), or -1.
 */
export function summaryPosition(history: readonly ChatMessage[], from: number, summary: string, minLength = 1): number {
  const needles = carriedSummaries(summary).filter((needle) => needle.length >= minLength);
  if (needles.length === 0) return -1;
  for (let i = Math.max(0, from); i < history.length; i++) {
    const text = textOf(history[i] as ChatMessage);
    if (needles.some((needle) => text.includes(needle))) return i;
  }
  return -1;
}

/** A request's `tools` offer the model at least one tool (every dialect sends them as an array). */
export const offersTools = (tools: unknown): boolean => Array.isArray(tools) && tools.length > 0;
