// @ts-check
// `archive-only`: a lossless context engine plugin (SPEC §10.3, issue #14 §1). It never summarises: a compaction keeps
// the system prompt, the first messages and the last messages, and replaces everything between them with one short
// pointer message. The host archives the replaced rows (inactive, compacted, still stored and searchable), so nothing
// is lost; the model is told that the earlier turns exist and can be searched.
//
// Selected only by `context.engine: archive-only` (config.yaml or a tenant's policy). The host builds it per
// compaction with the built-in engine's constructor arguments and calls `compress()` inside a compaction activity.

/** @typedef {{ role: 'system' | 'user' | 'assistant' | 'tool', content: unknown, tool_calls?: unknown[], tool_call_id?: string, name?: string }} ChatMessage */

const NAME = 'archive-only';
/** The pointer's first line, so the engine recognises its own pointer when it archives again. */
export const ARCHIVE_MARKER = '[ARCHIVED CONTEXT]';
const DEFAULTS = { threshold: 0.5, protectFirstN: 3, protectLastN: 20 };

/** @param {ChatMessage | undefined} message */
function isPointer(message) {
  return typeof message?.content === 'string' && message.content.startsWith(ARCHIVE_MARKER);
}

/**
 * Where the kept head ends and the kept tail starts. The head never ends between a tool call and its results, the
 * tail never starts with a tool result (its call moves into the tail too), and an earlier pointer is archived again.
 * @param {readonly ChatMessage[]} messages
 * @param {{ protectFirstN: number, protectLastN: number }} limits
 */
export function keptRange(messages, limits) {
  let headEnd = 0;
  while (headEnd < messages.length && messages[headEnd]?.role === 'system') headEnd++;
  let own = 0;
  while (headEnd < messages.length && own < limits.protectFirstN && !isPointer(messages[headEnd])) {
    headEnd++;
    own++;
  }
  while (headEnd < messages.length && messages[headEnd]?.role === 'tool') headEnd++;
  let tailStart = Math.max(headEnd, messages.length - Math.max(1, limits.protectLastN));
  while (tailStart > headEnd && messages[tailStart]?.role === 'tool') tailStart--;
  return { headEnd, tailStart };
}

/**
 * The pointer's role: never the same as the message before it, and not the same as the message after it when that can
 * be avoided (after a user message it is the assistant; at the start, a user message).
 * @param {string | undefined} before
 * @param {string | undefined} after
 * @returns {'user' | 'assistant'}
 */
export function pointerRole(before, after) {
  if (before === 'user') return 'assistant';
  if (before === undefined || before === 'system') return 'user';
  return after === 'user' ? 'assistant' : 'user';
}

/**
 * @param {{ model: string, contextLength: number, provider?: string, config?: Record<string, any> }} options
 */
export default function createArchiveOnlyEngine(options) {
  const config = { ...DEFAULTS, ...(options.config ?? {}) };
  let contextLength = options.contextLength;
  let lastPromptTokens = 0;
  let compressionCount = 0;
  const thresholdTokens = () => Math.floor(contextLength * config.threshold);

  return {
    name: NAME,
    /** @param {{ prompt_tokens?: number }} usage */
    updateFromResponse(usage) {
      lastPromptTokens = usage?.prompt_tokens ?? lastPromptTokens;
    },
    shouldCompress(promptTokens = lastPromptTokens) {
      return promptTokens >= thresholdTokens();
    },
    /**
     * @param {readonly ChatMessage[]} messages
     * @param {{ currentTokens?: number, focusTopic?: string, force?: boolean }} [compressOptions]
     * @returns {Promise<ChatMessage[]>}
     */
    async compress(messages, compressOptions = {}) {
      const { headEnd, tailStart } = keptRange(messages, config);
      const archived = messages.slice(headEnd, tailStart);
      // Nothing, or only an earlier pointer, between head and tail: nothing to archive.
      if (archived.length === 0 || (archived.length === 1 && isPointer(archived[0]))) return messages.slice();
      const earlier = archived.filter((m) => !isPointer(m)).length;
      const focus = compressOptions.focusTopic ? ` Focus asked for: ${compressOptions.focusTopic}.` : '';
      /** @type {ChatMessage} */
      const pointer = {
        role: pointerRole(messages[headEnd - 1]?.role, messages[tailStart]?.role),
        content:
          `${ARCHIVE_MARKER} ${earlier} earlier message(s) of this conversation were moved to its archive ` +
          'without summarising. They are stored unchanged and can be searched; ask for them if you need them.' +
          focus,
      };
      compressionCount++;
      lastPromptTokens = 0;
      return [...messages.slice(0, headEnd), pointer, ...messages.slice(tailStart)];
    },
    /** @param {string} _model @param {number} length */
    updateModel(_model, length) {
      contextLength = length;
    },
    getStatus() {
      return {
        last_prompt_tokens: lastPromptTokens,
        threshold_tokens: thresholdTokens(),
        context_length: contextLength,
        usage_percent: contextLength > 0 ? Math.round((lastPromptTokens / contextLength) * 100) : 0,
        compression_count: compressionCount,
      };
    },
  };
}
