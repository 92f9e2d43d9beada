// The drop-in OpenAI Chat Completions endpoint (issue #12): a client written for OpenAI points its base URL at the
// gateway and sends its whole history on every request. The history is matched against the stored transcript
// (history.ts), only its new suffix is stored (accepted = committed, before the model is called), the decisions due
// for it are waited for (the hygiene pre-step of SPEC §11 included), and the provider serving the requested model is
// sent either the client's own request, unchanged, while the conversation was never compacted (cache-neutral), or the
// same request with the compacted, sanitised transcript as its messages. The reply is stored with the provider's
// usage, which drives the in-loop check (SPEC §7) and background compaction like any other batch.
import type OpenAI from 'openai';
import type { IncomingMessage } from '../../../contracts/conversation.js';
import { CONVERSATION_ID_PATTERN } from '../../../contracts/http/conversations.js';
import { MAX_BATCH_MESSAGES, validateSubmit } from '../../../contracts/validation.js';
import { type CacheTtl, prepareContext } from '../../../engine/index.js';
import type { ChatMessage, Usage } from '../../../engine/types.js';
import { storedHistoryKeys } from '../../../infra/db/historyKeys.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { MAX_LINEAGE_HOPS } from '../../../infra/db/sessions.js';
import { toOpenAIMessage } from '../../../infra/llm/chat.js';
import { createOpenAIClient } from '../../../infra/llm/clients.js';
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type CompletionBody,
  createCompletion,
  streamCompletion,
} from '../../../infra/llm/openaiPassthrough.js';
import {
  type ProvidersConfig,
  providerApiKey,
  providerById,
  providerServingModel,
} from '../../../infra/llm/providers.js';
import type { Conversations } from '../conversations.js';
import { ChatUnavailableError, InvalidRequestError } from '../errors.js';
import { branchConversationId, derivedConversationId, historyKey, historyKeys, matchHistory } from './history.js';
import { StreamedReply, usageOf } from './streamedReply.js';

/** The dialect's prefix of idempotency keys and derived conversation ids. */
const DIALECT = 'oa';
const SOURCE = 'openai-chat';

/** A request refused before anything is stored, naming the request field (`param` of OpenAI's error object). */
export class DropinRequestError extends InvalidRequestError {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

export interface OpenAIChatDeps {
  conversations: Conversations;
  providers: ProvidersConfig | null;
  cacheTtl: CacheTtl | null;
  env?: Readonly<Record<string, string | undefined>>;
  /** Per-request timeout of the provider, ms (default 300 s). */
  timeoutMs?: number;
}

/** Where a request's reply goes, and what it is sent upstream with. */
interface Target {
  conversationId: string;
  /** The conversation is stored already (else the first append creates it). */
  exists: boolean;
  /** The history is a strict prefix of what is stored: the reply starts a branch (`branchFrom`'s session). */
  branchFrom: { sessionId: string } | null;
  /** The conversation is new: created as a branch of this session, or from nothing. */
  parentSessionId: string | null;
  /** Index of the first message of the history to store. */
  from: number;
}

/** The answer, and the conversation its reply is stored in (null: a branch named by the reply, still streaming). */
export type CompletionAnswer =
  | { kind: 'json'; conversationId: string; completion: ChatCompletion }
  | { kind: 'stream'; conversationId: string | null; events: AsyncIterable<string> };

/** The client's message as the store keeps it (SPEC §1.2 roles: a `developer` message is a system message). */
function storedMessage(message: Record<string, unknown>): ChatMessage {
  const stored: Record<string, unknown> = {
    role: message.role === 'developer' ? 'system' : message.role,
    content: message.content ?? null,
  };
  for (const field of ['tool_calls', 'tool_call_id', 'name'] as const) {
    if (message[field] !== undefined) stored[field] = message[field];
  }
  return stored as unknown as ChatMessage;
}

/** The batches of `items` the store takes (at most MAX_BATCH_MESSAGES each). */
function batchesOf(items: IncomingMessage[]): IncomingMessage[][] {
  const batches: IncomingMessage[][] = [];
  for (let i = 0; i < items.length; i += MAX_BATCH_MESSAGES) batches.push(items.slice(i, i + MAX_BATCH_MESSAGES));
  return batches;
}

/** The stored reply of a completion's first choice. */
export function replyOf(message: OpenAI.Chat.ChatCompletionMessage | undefined): ChatMessage {
  const reply: ChatMessage = { role: 'assistant', content: message?.content ?? null };
  const calls = (message?.tool_calls ?? []).filter((c) => c.type === 'function');
  if (calls.length > 0) {
    reply.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  return reply;
}

export class OpenAIChatCompletions {
  private readonly clients = new Map<string, OpenAI>();

  constructor(private readonly deps: OpenAIChatDeps) {}

  async complete(tenantId: string, body: CompletionBody, conversationHeader?: string): Promise<CompletionAnswer> {
    const history = this.validate(body);
    const provider = this.providerFor(body.model);
    const keys = historyKeys(DIALECT, history);
    const target = await this.target(tenantId, history, keys, conversationHeader);
    const start = {
      model: body.model,
      provider: provider.id,
      source: SOURCE,
      parentSessionId: target.parentSessionId,
    };
    const { conversations } = this.deps;
    let upstream: CompletionBody = body;
    if (!target.branchFrom) {
      const items = history.slice(target.from).map((message, i) => ({
        message,
        idempotencyKey: keys[target.from + i] as string,
      }));
      let decided: { compactions: number; sessionId: string } | null = null;
      for (const [i, batch] of batchesOf(items).entries()) {
        const creates = !target.exists && i === 0;
        const submitted = await conversations.submitDecided(
          tenantId,
          target.conversationId,
          { messages: batch },
          creates ? start : undefined,
        );
        decided = submitted.decided
          ? { compactions: submitted.head.state?.compressionCount ?? 0, sessionId: submitted.head.current_session_id }
          : null;
      }
      // Every decision due for what was accepted (hygiene before the turn) is taken before the model is called:
      // at commit when the batches were quiet, else by the workflow, waited for.
      if (!decided) {
        const status = await conversations.syncForRead(tenantId, target.conversationId);
        decided = { compactions: status.compressionCount, sessionId: status.sessionId };
      }
      if (decided.compactions > 0) upstream = await this.compacted(tenantId, body, decided, provider.id);
    }
    const client = this.clientFor(provider);
    const store = (reply: ChatMessage, usage: Usage | undefined) =>
      this.storeReply(tenantId, target, history, keys, reply, usage, start);
    if (body.stream === true) {
      const streamed = new StreamedReply(body);
      const chunks = await streamCompletion(client, provider.id, streamed.upstreamBody(upstream));
      // A branch's id depends on the reply, not known before it streams.
      const conversationId = target.branchFrom ? null : target.conversationId;
      return { kind: 'stream', conversationId, events: streamed.relay(chunks, store) };
    }
    const completion = await createCompletion(client, provider.id, upstream);
    const reply = replyOf(completion.choices[0]?.message);
    const conversationId = await store(reply, usageOf(completion.usage));
    return { kind: 'json', conversationId, completion };
  }

  /** The history as stored messages; 400 naming the field when the store could not keep it. */
  private validate(body: CompletionBody): ChatMessage[] {
    const history = body.messages.map((m) => storedMessage(m as Record<string, unknown>));
    for (let i = 0; i < history.length; i += MAX_BATCH_MESSAGES) {
      const slice = history.slice(i, i + MAX_BATCH_MESSAGES);
      const problem = validateSubmit({ messages: slice.map((message, j) => ({ message, idempotencyKey: `k${j}` })) });
      if (problem) {
        const named = problem.replace(/^messages\[(\d+)\]\.message/, (_, j) => `messages[${i + Number(j)}]`);
        throw new DropinRequestError(named, /^messages\[\d+\][.\w]*/.exec(named)?.[0] ?? 'messages');
      }
    }
    return history;
  }

  private providerFor(model: string) {
    const config = this.deps.providers;
    const id = config ? providerServingModel(model, config.providers, config.main.provider) : null;
    const provider = config && id ? providerById(config, id) : null;
    if (!provider) throw new DropinRequestError(`no configured provider serves the model '${model}'`, 'model');
    if (provider.kind !== 'openai') {
      throw new DropinRequestError(
        `the model '${model}' is served by the Anthropic provider '${provider.id}'; this endpoint sends OpenAI ` +
          'Chat Completions requests to OpenAI-compatible providers only',
        'model',
      );
    }
    return provider;
  }

  private clientFor(provider: NonNullable<ReturnType<OpenAIChatCompletions['providerFor']>>): OpenAI {
    const cached = this.clients.get(provider.id);
    if (cached) return cached;
    let apiKey: string | null;
    try {
      apiKey = providerApiKey(provider, this.deps.env ?? process.env);
    } catch (err) {
      throw new ChatUnavailableError((err as Error).message);
    }
    const client = createOpenAIClient({
      baseUrl: provider.baseUrl,
      apiKey,
      timeoutMs: this.deps.timeoutMs ?? 300_000,
      headers: provider.headers,
    });
    this.clients.set(provider.id, client);
    return client;
  }

  /**
   * The conversation the history belongs to: the named or derived one while the history extends what it stores;
   * where it diverges, the branch for the history up to the first differing message (followed as often as the
   * history diverged before, at most MAX_LINEAGE_HOPS times).
   */
  private async target(
    tenantId: string,
    history: readonly ChatMessage[],
    keys: readonly string[],
    header: string | undefined,
  ): Promise<Target> {
    if (header !== undefined && !new RegExp(CONVERSATION_ID_PATTERN).test(header)) {
      throw new DropinRequestError(
        `x-conversation-id must match ${CONVERSATION_ID_PATTERN} (letters, digits, _ . -; at most 128)`,
        'x-conversation-id',
      );
    }
    const db = this.deps.conversations.readDb;
    let conversationId = header ?? derivedConversationId(DIALECT, tenantId, history);
    let parentSessionId: string | null = null;
    for (let hop = 0; hop <= MAX_LINEAGE_HOPS; hop++) {
      const { sessionId, present, stored } = await storedHistoryKeys(db, tenantId, conversationId, DIALECT, keys);
      if (sessionId === null) return { conversationId, exists: false, branchFrom: null, parentSessionId, from: 0 };
      const match = matchHistory(keys, present, stored);
      if (match.kind === 'extends') {
        return { conversationId, exists: true, branchFrom: null, parentSessionId: null, from: match.from };
      }
      if (match.kind === 'prefix') {
        return { conversationId, exists: true, branchFrom: { sessionId }, parentSessionId: null, from: 0 };
      }
      parentSessionId = sessionId;
      conversationId = branchConversationId(conversationId, history, match.at + 1);
    }
    throw new DropinRequestError(
      `the history diverges from the stored conversation more than ${MAX_LINEAGE_HOPS} times`,
      'messages',
    );
  }

  /** The request with the conversation's compacted, sanitised transcript as its messages. */
  private async compacted(
    tenantId: string,
    body: CompletionBody,
    status: { sessionId: string },
    provider: string,
  ): Promise<CompletionBody> {
    const { conversations, providers, cacheTtl } = this.deps;
    const rows = await loadTranscript(conversations.readDb, tenantId, status.sessionId);
    const cachingRoute = providers ? (providerById(providers, provider)?.cachingRoute ?? null) : null;
    const { messages } = prepareContext(
      rows.map((r) => r.message),
      { model: body.model, cachingRoute, cacheTtl },
    );
    return { ...body, messages: messages.map(toOpenAIMessage) };
  }

  /**
   * Stores the reply with the provider's usage: after the history in its conversation, or — the history being a
   * strict prefix of the stored one — as a branch holding the history and the reply.
   */
  private async storeReply(
    tenantId: string,
    target: Target,
    history: readonly ChatMessage[],
    keys: readonly string[],
    reply: ChatMessage,
    usage: Usage | undefined,
    start: { model: string; provider: string; source: string; parentSessionId: string | null },
  ): Promise<string> {
    const { conversations } = this.deps;
    const replyItem = { message: reply, idempotencyKey: historyKey(DIALECT, history.length, reply) };
    if (!target.branchFrom) {
      await conversations.submit(tenantId, target.conversationId, {
        messages: [replyItem],
        ...(usage ? { usage } : {}),
      });
      return target.conversationId;
    }
    // The branch a later request finds: it diverges from the stored history at the reply.
    const branch = branchConversationId(target.conversationId, [...history, reply], history.length + 1);
    const items = [...history.map((message, i) => ({ message, idempotencyKey: keys[i] as string })), replyItem];
    const batches = batchesOf(items);
    const branchStart = { ...start, parentSessionId: target.branchFrom.sessionId };
    for (const [i, batch] of batches.entries()) {
      const last = i === batches.length - 1;
      await conversations.submit(
        tenantId,
        branch,
        { messages: batch, ...(last && usage ? { usage } : {}) },
        branchStart,
      );
    }
    return branch;
  }
}

export type { ChatCompletionChunk };
