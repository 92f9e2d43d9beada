// A thread's work on the app-server (SPEC §15.2): a turn (`turn/start`, then notifications until `turn/completed`)
// and a manual compaction (`thread/compact/start`, which the app-server runs as a turn of its own holding a
// `contextCompaction` item). Each collects what the notifications of its thread say: the agent's text, the token
// usage of the turn, and every compaction the app-server reported (its own automatic ones included, which show up
// as a `contextCompaction` item inside a turn).
import type { AppServerProcess } from './appServer.js';

/** The app-server's token counts (v2 `TokenUsageBreakdown`). */
export interface AppServerUsage {
  totalTokens: number;
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteInputTokens: number;
  outputTokens: number;
  reasoningOutputTokens: number;
}

/** A compaction the app-server reported: the `contextCompaction` item and the turn that held it. */
export interface AppServerCompaction {
  threadId: string;
  turnId: string;
  itemId: string;
  /**
   * The app-server's count of the compacted context (`tokenUsage.last.totalTokens` as it reports it right before the
   * item completes); null when it reported none.
   */
  tokensAfter: number | null;
}

export interface AppServerTurnResult {
  turnId: string;
  status: 'completed' | 'interrupted' | 'failed' | string;
  error: string | null;
  /** The agent's messages of the turn, joined by blank lines. */
  text: string;
  /** The last model call's usage (`tokenUsage.last`), null when none was reported. */
  usage: AppServerUsage | null;
  /** The thread's context window as the app-server knows it. */
  contextWindow: number | null;
  compactions: AppServerCompaction[];
}

export class AppServerTurnError extends Error {
  constructor(
    message: string,
    /** A failure a new attempt can mend (the process died, the turn timed out) rather than a refusal. */
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'AppServerTurnError';
  }
}

interface Collector {
  result: Promise<AppServerTurnResult>;
  /** The id of the turn this collector follows, once known (the request's answer or `turn/started`). */
  follow(turnId: string): void;
  stop(): void;
}

/**
 * Follows the thread's notifications until a turn completes: the first turn started after the collector opened
 * (a compaction turn's id arrives only this way) unless `follow` names one.
 */
function collect(
  server: AppServerProcess,
  threadId: string,
  timeoutMs: number,
  onText?: (delta: string) => void,
): Collector {
  let turnId: string | null = null;
  const texts = new Map<string, string>();
  const order: string[] = [];
  const compactions: AppServerCompaction[] = [];
  let usage: AppServerUsage | null = null;
  let contextWindow: number | null = null;
  let stop: () => void = () => undefined;
  const result = new Promise<AppServerTurnResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      // Nothing waits for it any more: the app-server stops it (a late compaction would change a context the
      // host has already reported unchanged).
      if (turnId) void server.request('turn/interrupt', { threadId, turnId }).catch(() => undefined);
      reject(new AppServerTurnError(`codex app-server: the turn did not complete within ${timeoutMs} ms`, true));
    }, timeoutMs);
    // The turn is known from the request's answer or from `turn/started`: notifications of an earlier turn (a
    // resumed thread replays its last usage) never adopt it.
    const mine = (method: string, params: Record<string, unknown>) => {
      if (params.threadId !== threadId) return false;
      const id = typeof params.turnId === 'string' ? params.turnId : turnOf(params)?.id;
      if (turnId === null && method === 'turn/started' && typeof id === 'string') turnId = id;
      return id === undefined || id === turnId;
    };
    const off = server.onNotification((method, params) => {
      if (!mine(method, params)) return;
      const item = params.item as { type?: string; id?: string; text?: string } | undefined;
      if (method === 'item/agentMessage/delta' && typeof params.delta === 'string') onText?.(params.delta);
      else if (method === 'item/completed' && item?.type === 'agentMessage' && typeof item.id === 'string') {
        if (!texts.has(item.id)) order.push(item.id);
        texts.set(item.id, item.text ?? '');
      } else if (method === 'item/completed' && item?.type === 'contextCompaction' && typeof item.id === 'string') {
        const tokensAfter = usage?.totalTokens ?? null;
        compactions.push({ threadId, turnId: turnId ?? String(params.turnId), itemId: item.id, tokensAfter });
      } else if (method === 'thread/tokenUsage/updated') {
        const tokenUsage = params.tokenUsage as { last?: AppServerUsage; modelContextWindow?: number | null };
        usage = tokenUsage?.last ?? usage;
        contextWindow = tokenUsage?.modelContextWindow ?? contextWindow;
      } else if (method === 'turn/completed') {
        const turn = turnOf(params) ?? {};
        stop();
        resolve({
          turnId: String(turn.id ?? turnId),
          status: String(turn.status ?? 'completed'),
          error: errorText(turn.error),
          text: order.map((id) => texts.get(id) ?? '').join('\n\n'),
          usage,
          contextWindow,
          compactions,
        });
      }
    });
    const exited = () => {
      stop();
      reject(new AppServerTurnError('codex app-server exited during the turn', true));
    };
    void server.exited.then(exited);
    stop = () => {
      clearTimeout(timer);
      off();
    };
  });
  return {
    result,
    follow: (id) => {
      turnId = id;
    },
    stop: () => stop(),
  };
}

function turnOf(params: Record<string, unknown>): { id?: string; status?: string; error?: unknown } | undefined {
  return params.turn as { id?: string; status?: string; error?: unknown } | undefined;
}

function errorText(error: unknown): string | null {
  if (error === null || error === undefined) return null;
  if (typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    return (error as { message: string }).message;
  }
  return JSON.stringify(error);
}

/** Runs one turn with `text` as the user's input; resolves when it has completed (or failed, or was interrupted). */
export async function runAppServerTurn(
  server: AppServerProcess,
  threadId: string,
  text: string,
  options: { timeoutMs: number; onText?: (delta: string) => void; signal?: AbortSignal },
): Promise<AppServerTurnResult> {
  const collector = collect(server, threadId, options.timeoutMs, options.onText);
  const interrupt = (turnId: string) => () => {
    void server.request('turn/interrupt', { threadId, turnId }).catch(() => undefined);
  };
  try {
    const started = await server.request<{ turn?: { id?: string } }>('turn/start', {
      threadId,
      input: [{ type: 'text', text, text_elements: [] }],
    });
    if (started.turn?.id) {
      collector.follow(started.turn.id);
      options.signal?.addEventListener('abort', interrupt(started.turn.id), { once: true });
    }
  } catch (err) {
    collector.stop();
    throw err;
  }
  return collector.result;
}

/**
 * SPEC §15.2 manual compaction: `thread/compact/start`, then the compaction turn until it completes (at most
 * `timeoutMs`, the compaction ceiling). The result's `compactions` is empty when the app-server compacted nothing.
 */
export async function compactAppServerThread(
  server: AppServerProcess,
  threadId: string,
  timeoutMs: number,
): Promise<AppServerTurnResult> {
  const collector = collect(server, threadId, timeoutMs);
  try {
    await server.request('thread/compact/start', { threadId });
  } catch (err) {
    collector.stop();
    throw err;
  }
  return collector.result;
}
