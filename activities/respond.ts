// The agent turn of chat backend mode (issue: LLM providers §3): send the prepared request (active transcript,
// sanitised, cache-marked for Claude on Anthropic/OpenRouter with the configured TTL) to the main model, then store
// the reply and the turn's usage with its cache economics in ONE transaction, keyed by the turn id. A retry — after
// a worker crash at any point, or a client's retried request — finds the stored turn and never calls the model again
// (issue #9 §2). The turn's steps, shared with the gateway, are turnRunner.ts; this file is the activity and its types.
import { Context } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { CacheRecovery, ReplyKey } from '../contracts/conversation.js';
import type { CacheTtl } from '../engine/index.js';
import type { NativeCovered } from '../engine/nativeCompaction.js';
import type { AppServerPool } from '../infra/codex/pool.js';
import type { Database } from '../infra/db/schema.js';
import { TurnTextPublisher } from '../infra/db/turnText.js';
import type { ProvidersConfig } from '../infra/llm/providers.js';
import type { ChatTool, ChatUsage } from '../infra/llm/types.js';
import { createTurnRunner } from './turnRunner.js';

export interface RespondDeps {
  db: Kysely<Database>;
  /** Configured providers (config.yaml `providers:`); null: chat backend mode is not available. */
  providers: ProvidersConfig | null;
  cacheTtl: CacheTtl | null;
  /** Per-request timeout of the main model, ms (default 300 s). */
  respondTimeoutMs?: number;
  env?: Readonly<Record<string, string | undefined>>;
  /** The worker's Codex app-server processes (SPEC §15.2); absent: app-server providers cannot run here. */
  appServers?: AppServerPool | null;
}

export interface RespondInput {
  tenantId: string;
  conversationId: string;
  /** The session the workflow knows (the transcript is read from the conversation's current one). */
  sessionId: string;
  model: string;
  provider: string | null;
  /** The turn id (derived by the gateway from the request's idempotency keys). */
  turnKey: string;
  tools: ChatTool[] | null;
  afterCompactionId: string | null;
  /** Publish the reply's text as the provider writes it, for the gateway that streams the turn (turnText.ts). */
  relay?: boolean;
  /** SPEC §15.1: the conversation's `compact_threshold` for Responses requests; null or absent when not opted in. */
  nativeCompactThreshold?: number | null;
  /** The workflow's last real reading (SPEC §15.2: an app-server compaction's "tokens before"). */
  lastPromptTokens?: number;
  /** A drop-in client's turn: the reply's idempotency key is the one its dialect gives it (default: the turn id). */
  replyKey?: ReplyKey;
}

export interface RespondResult {
  /** The stored reply's row id (its content is read from PostgreSQL, not carried through Temporal). */
  messageId: number;
  finishReason: string | null;
  usage: ChatUsage;
  cachingEnabled: boolean;
  tokenEstimate: number;
  /** The conversation's totals after the reply. */
  totals: { version: number; activeMessages: number; activeTokens: number };
  /** The batch sequence number of the reply when this attempt stored it (absent: stored by an earlier attempt). */
  replySeq?: number;
  /**
   * The reply came with a native checkpoint (SPEC §15.1): its reading measured the input before the server compacted
   * it, so it is no verdict; the next real reading counts.
   */
  nativeCheckpoint?: boolean;
  /** With `nativeCheckpoint` when this attempt stored it: what the checkpoint stands in for. */
  nativeCovered?: NativeCovered;
  /**
   * SPEC §15.2: the turn ran on a Codex app-server (its thread owns the context: the local compressor keeps out),
   * with the session's compression_count after the compactions the app-server reported in it.
   */
  appServer?: { compressionCount: number; compactions: string[] };
}

/**
 * The deps of a turn from a process's LLM configuration, wherever the turn runs (worker or gateway): no cache TTL
 * given means the default 5 minutes.
 */
export function respondDepsFrom(deps: {
  providers?: ProvidersConfig | null;
  cacheTtl?: CacheTtl | null;
  env?: Readonly<Record<string, string | undefined>>;
  respondTimeoutMs?: number;
  appServers?: AppServerPool | null;
}): Omit<RespondDeps, 'db'> {
  return {
    providers: deps.providers ?? null,
    cacheTtl: deps.cacheTtl === undefined ? '5m' : deps.cacheTtl,
    ...(deps.appServers ? { appServers: deps.appServers } : {}),
    ...(deps.env ? { env: deps.env } : {}),
    ...(deps.respondTimeoutMs ? { respondTimeoutMs: deps.respondTimeoutMs } : {}),
  };
}

export function createRespondActivities(deps: RespondDeps) {
  const turns = createTurnRunner(deps);

  return {
    async respond(input: RespondInput): Promise<RespondResult> {
      const start = await turns.startingPoint(input);
      if ('stored' in start) return start.stored;
      const { cancellationSignal: signal, info } = Context.current();
      // A retry's text starts over: its attempt number says so to the gateway.
      const relay = input.relay ? new TurnTextPublisher(deps.db, input.turnKey, info.attempt) : null;
      const answer = await turns
        .call(input, start.rows, { signal, ...(relay ? { onText: (delta: string) => relay.push(delta) } : {}) })
        .finally(() => relay?.close());
      const stored = await turns.store(input, answer);
      if (stored) return stored.result;
      const again = await turns.storedTurn(input);
      if (again) return again;
      throw new Error(`turn ${input.turnKey}: the reply was stored by another attempt but its turn is missing`);
    },

    /** Cache economics of a compaction, measured on the turns after it (issue: LLM providers §4). */
    async recordCacheRecovery(input: { tenantId: string } & CacheRecovery): Promise<void> {
      const { tenantId, ...recovery } = input;
      await turns.recordCacheRecovery(tenantId, recovery);
    },
  };
}

export type RespondActivities = ReturnType<typeof createRespondActivities>;
