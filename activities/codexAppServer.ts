// The agent turn and the manual compaction of a Codex app-server session (SPEC §15.2): the app-server owns the
// thread's context, so a turn sends it only what arrived since the last reply (a new thread is given the transcript
// before that once), and the reply comes back as the agent's message. Every compaction the app-server reports in a
// turn — its own automatic ones, or the one `thread/compact/start` asked for — is recorded (infra/db/appServer.ts)
// before the activity returns; the visible transcript is never rewritten.
import { ApplicationFailure } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import { FailureType } from '../contracts/failures.js';
import type { ChatMessage } from '../engine/types.js';
import { AppServerExitedError, AppServerRpcError } from '../infra/codex/appServer.js';
import type { AppServerPool, AppServerThread } from '../infra/codex/pool.js';
import {
  AppServerTurnError,
  type AppServerTurnResult,
  type AppServerUsage,
  compactAppServerThread,
  runAppServerTurn,
} from '../infra/codex/turns.js';
import {
  claimCodexThread,
  type RecordedAppServerCompaction,
  recordAppServerCompaction,
  selectCodexThread,
} from '../infra/db/appServer.js';
import type { StoredMessage } from '../infra/db/messages.js';
import type { Database } from '../infra/db/schema.js';
import { chatProviderOf, type ProviderConfig, type ProvidersConfig } from '../infra/llm/providers.js';
import type { ChatResult, ChatUsage } from '../infra/llm/types.js';

export interface AppServerDeps {
  db: Kysely<Database>;
  appServers: AppServerPool | null;
}

interface SessionRef {
  tenantId: string;
  conversationId: string;
  model: string;
  /** A new thread's developer instructions: the transcript's system prompt. */
  instructions?: string | null;
}

function textOf(message: ChatMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (Array.isArray(message.content)) {
    return message.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join(' ');
  }
  return '';
}

/**
 * What the turn sends: the messages after the last assistant reply. A thread created now is given the transcript
 * before them once, so a conversation that moves onto an app-server keeps its context.
 */
export function appServerInput(rows: readonly StoredMessage[], newThread: boolean): string {
  let last = -1;
  rows.forEach((row, i) => {
    if (row.message.role === 'assistant') last = i;
  });
  const fresh = rows.slice(last + 1).filter((r) => r.message.role === 'user' || r.message.role === 'tool');
  const asked = fresh.map((r) => textOf(r.message)).join('\n\n');
  const earlier = newThread ? rows.slice(0, last + 1).filter((r) => r.message.role !== 'system') : [];
  if (earlier.length === 0) return asked;
  const transcript = earlier.map((r) => `${r.message.role}: ${textOf(r.message)}`).join('\n\n');
  return `The conversation so far:\n\n${transcript}\n\n---\n\n${asked}`;
}

export function chatUsageOf(usage: AppServerUsage | null): ChatUsage {
  const input = usage?.inputTokens ?? 0;
  const cached = usage?.cachedInputTokens ?? 0;
  const written = usage?.cacheWriteInputTokens ?? 0;
  const output = usage?.outputTokens ?? 0;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    cache_read_tokens: cached,
    cache_write_tokens: written,
    uncached_input_tokens: Math.max(0, input - cached - written),
  };
}

function settingsOf(provider: ProviderConfig) {
  if (!provider.appServer) throw new Error(`provider '${provider.id}' is not a codex_app_server provider`);
  return provider.appServer;
}

/** Errors no retry can mend leave as non-retryable failures; a dead process or a timeout is retried. */
function failureOf(err: unknown): unknown {
  if (err instanceof AppServerExitedError) return err;
  if (err instanceof AppServerTurnError) {
    return err.transient ? err : ApplicationFailure.nonRetryable(err.message, FailureType.AppServerTurnFailed);
  }
  if (err instanceof AppServerRpcError) {
    return ApplicationFailure.nonRetryable(err.message, FailureType.AppServerTurnFailed);
  }
  if (err instanceof Error && err.message.includes('spawn')) {
    return ApplicationFailure.nonRetryable(
      `codex app-server could not start: ${err.message}`,
      FailureType.AppServerTurnFailed,
    );
  }
  return err;
}

export function createAppServerSessions(deps: AppServerDeps) {
  const pool = () => {
    if (!deps.appServers) throw new Error('this process runs no codex app-server (its pool was not configured)');
    return deps.appServers;
  };

  /** The conversation's thread in a live process (created and kept on its first turn). */
  async function threadOf(ref: SessionRef, provider: ProviderConfig, create: boolean): Promise<AppServerThread | null> {
    const settings = settingsOf(provider);
    const known = await selectCodexThread(deps.db, ref.tenantId, ref.conversationId);
    if (!known && !create) return null;
    const thread = await pool().thread(provider.id, settings, {
      threadId: known,
      model: ref.model,
      instructions: ref.instructions ?? null,
    });
    if (!thread.created) return thread;
    const kept = await claimCodexThread(deps.db, ref.tenantId, ref.conversationId, thread.threadId);
    if (kept === thread.threadId) return thread;
    return pool().thread(provider.id, settings, { threadId: kept, model: ref.model });
  }

  async function record(
    ref: SessionRef,
    turn: AppServerTurnResult,
    tokensBefore: number,
  ): Promise<RecordedAppServerCompaction[]> {
    const recorded: RecordedAppServerCompaction[] = [];
    for (const compaction of turn.compactions) {
      recorded.push(
        await recordAppServerCompaction(deps.db, ref.tenantId, ref.conversationId, {
          ...compaction,
          tokensBefore,
          tokensAfter: compaction.tokensAfter ?? 0,
        }),
      );
    }
    return recorded;
  }

  return {
    /** One turn on the thread: the reply as a ChatResult, and the compactions the app-server made in it. */
    async turn(
      ref: SessionRef & { lastPromptTokens: number },
      provider: ProviderConfig,
      rows: readonly StoredMessage[],
      options: { timeoutMs: number; signal?: AbortSignal; onText?: (delta: string) => void },
    ): Promise<{ result: ChatResult; compactions: RecordedAppServerCompaction[] }> {
      try {
        const known = await selectCodexThread(deps.db, ref.tenantId, ref.conversationId);
        const system = rows.filter((r) => r.message.role === 'system').map((r) => textOf(r.message));
        const thread = await threadOf({ ...ref, instructions: system.join('\n\n') || null }, provider, true);
        if (!thread) throw new Error('unreachable: a turn creates its thread');
        const turn = await runAppServerTurn(thread.server, thread.threadId, appServerInput(rows, known === null), {
          timeoutMs: options.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
          ...(options.onText ? { onText: options.onText } : {}),
        });
        const compactions = await record(ref, turn, ref.lastPromptTokens);
        if (turn.status !== 'completed') {
          throw new AppServerTurnError(
            `codex app-server turn ${turn.turnId} ${turn.status}${turn.error ? `: ${turn.error}` : ''}`,
            false,
          );
        }
        const result: ChatResult = {
          message: { role: 'assistant', content: turn.text },
          finishReason: 'stop',
          rawFinishReason: turn.status,
          refusal: null,
          usage: chatUsageOf(turn.usage),
          model: ref.model,
          cachingEnabled: false,
        };
        return { result, compactions };
      } catch (err) {
        throw failureOf(err);
      }
    },

    /**
     * SPEC §15.2 `/compress` (and the `hermes` mode's own trigger): `thread/compact/start`, waited for at most
     * `timeoutMs`. Null when the conversation has no thread yet (nothing to compact).
     */
    async compact(
      ref: SessionRef & { lastPromptTokens: number },
      provider: ProviderConfig,
      timeoutMs: number,
    ): Promise<{ compactions: RecordedAppServerCompaction[] } | null> {
      try {
        const thread = await threadOf(ref, provider, false);
        if (!thread) return null;
        const turn = await compactAppServerThread(thread.server, thread.threadId, timeoutMs);
        const compactions = await record(ref, turn, ref.lastPromptTokens);
        if (turn.status !== 'completed' && compactions.length === 0) {
          throw new AppServerTurnError(
            `codex app-server compaction ${turn.status}${turn.error ? `: ${turn.error}` : ''}`,
            false,
          );
        }
        return { compactions };
      } catch (err) {
        throw failureOf(err);
      }
    },
  };
}

export type AppServerSessions = ReturnType<typeof createAppServerSessions>;

/** How an app-server compaction the host asked for ended (nothing changes on failure; the user is told). */
export interface AppServerCompactOutcome {
  status: 'committed' | 'noop' | 'failed';
  /** The records of the compactions the app-server reported (usually one). */
  compactionIds: string[];
  /** The session's compression_count after them (-1: none recorded). */
  compressionCount: number;
  error: string | null;
}

/** The activity the workflow calls for SPEC §15.2 `/compress` and the `hermes` mode. Never throws, never retried. */
export function createAppServerActivities(deps: AppServerDeps & { providers: ProvidersConfig | null }) {
  const sessions = createAppServerSessions(deps);
  return {
    async compactAppServer(input: {
      tenantId: string;
      conversationId: string;
      model: string;
      provider: string | null;
      lastPromptTokens: number;
      /** SPEC §15.2: at most `compaction_ceiling_seconds`. */
      timeoutMs: number;
    }): Promise<AppServerCompactOutcome> {
      const provider = chatProviderOf(deps.providers, input.provider);
      const failed = (error: string): AppServerCompactOutcome => ({
        status: 'failed',
        compactionIds: [],
        compressionCount: -1,
        error,
      });
      if (provider?.api !== 'codex_app_server') return failed(`provider '${input.provider}' is not a codex app-server`);
      try {
        const done = await sessions.compact(input, provider, input.timeoutMs);
        if (!done) return { ...failed(''), status: 'noop', error: null };
        const last = done.compactions.at(-1);
        return {
          status: last ? 'committed' : 'noop',
          compactionIds: done.compactions.map((c) => c.compactionId),
          compressionCount: last?.compressionCount ?? -1,
          error: null,
        };
      } catch (err) {
        return failed(err instanceof Error ? err.message : String(err));
      }
    },
  };
}

export type AppServerActivities = ReturnType<typeof createAppServerActivities>;
