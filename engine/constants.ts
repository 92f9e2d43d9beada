// Literal strings and fixed constants of SPEC §2.4 and §16. Exact text: tests compare against these.

export const PRUNED_TOOL_OUTPUT = '[Old tool output cleared to save context space]';
export const DUPLICATE_TOOL_OUTPUT = '[Duplicate tool output — same content as a more recent call]';
export const ORPHAN_CALL_STUB = '[Result from earlier conversation — see context summary above]';
export const SUMMARY_PREFIX =
  '[CONTEXT COMPACTION] Earlier turns in this conversation were compacted to save context space. The summary below describes work that already happened, and the current state (files, settings, running processes) may already reflect it. Use it as background: continue from where the work stopped, do not repeat finished steps, and treat the newest user message after this summary as the request to answer.';
export const SYSTEM_NOTE =
  '[Note: Some earlier conversation turns have been compacted into a handoff summary to preserve context space. The current session state may still reflect earlier work, so build on that summary and state rather than re-doing work.]';
export const COMPACTION_MARKER = '[CONTEXT COMPACTION';
export const LEGACY_SUMMARY_MARKER = '[CONTEXT SUMMARY]:';
/** Registry of reserved synthetic user-message prefixes (SPEC §1.3 rule 4, §16.1). Hosts append theirs. */
export const SYNTHETIC_USER_PREFIXES: string[] = [COMPACTION_MARKER, LEGACY_SUMMARY_MARKER];

export const MINIMUM_CONTEXT_LENGTH = 64_000;
export const TRIGGER_CAP_FRACTION = 0.85;
export const CODEX_GPT55_AUTORAISE_PERCENT = 0.85;
export const SMALL_CONTEXT_BOUNDARY = 512_000;
export const ALIAS_900K_WINDOW = 900_000;
export const CODEX_OAUTH_WINDOW = 272_000;
export const UNKNOWN_MODEL_WINDOW = 256_000;
export const MESSAGE_OVERHEAD_TOKENS = 10;
export const IMAGE_PART_TOKENS = 1_600;
export const TOOL_OUTPUT_PRUNE_CHARS = 200;
export const SUMMARY_FAILURE_COOLDOWN_S = 600;
export const STRUCTURAL_BACKOFF_S = 300;
export const RECOVERY_PROBE_S = 300;
export const TRIP_STRIKES = 2;
export const HYGIENE_TRIGGER_FRACTION = 0.85;
export const HYGIENE_WARNING_FRACTION = 0.95;
export const HYGIENE_MIN_MESSAGES = 4;
export const HYGIENE_FAILURE_COOLDOWN_S = 300;

// User-facing notices (SPEC §16.5).
export const NOTICE_COMPACTING = '🗜️ Compacting context: summarizing earlier turns to make room...';
export const NOTICE_NOOP_SHORT = 'Nothing to compress: the conversation is too short.';
export const NOTICE_NOOP_NO_WINDOW = 'Nothing to compress: no earlier turns outside the protected head and tail.';
export const NOTICE_ABORT =
  '⚠ Compression aborted: the summary could not be generated. No messages were dropped; the conversation continues uncompressed.';
export const NOTICE_FALLBACK =
  '⚠ Summary generation failed; earlier turns were compacted with a basic fallback summary. The original messages remain stored and searchable.';
export const NOTICE_HYGIENE_FAILED = '⚠️ Context compression before your message failed. No messages were dropped.';
export const NOTICE_HYGIENE_WARNING =
  "⚠️ This conversation is close to the model's context limit even after compaction. Consider /new to start a fresh session or /compress to compact it now.";
export const NOTICE_MODEL_SWITCH =
  "Switching model or credentials mid-conversation: the provider's prompt cache does not carry over, so the next request re-reads the whole conversation at the full input price.";
export const NOTICE_CACHE_DISABLED = '💾 Prompt caching: DISABLED';
