// The drop-in OpenAI Responses endpoint (issue #12): a client of the Responses API (`store: false`, the whole input
// each time, no `previous_response_id`) points its base URL at the gateway. `instructions` and the input items are
// read as stored messages (infra/llm/responsesItems.ts), stored and decided on by DropinFlow, and the provider of
// the model gets the client's own request while the conversation was never compacted (reasoning items included), or
// the same request with the compacted, sanitised transcript as `instructions` and `input` (reasoning items, whose
// preceding content changed, are then left out and counted). The reply — the response's output items — is stored
// with the provider's usage. SPEC §15.1: where the gate lets it and the client did not set it, the request carries
// `context_management` with the conversation's threshold; the client keeps the returned `compaction` items and sends
// them back (its input is passed through); a reply that carries one is stored without its reading.

import { prepareContext } from '../../../engine/index.js';
import {
  compactionItemsOf,
  contextManagementField,
  nativeCompactionGate,
  nativeRouteEligible,
} from '../../../engine/nativeCompaction.js';
import type { ChatMessage, Usage } from '../../../engine/types.js';
import { loadTranscript } from '../../../infra/db/messages.js';
import { disableResponsesNative, responsesNativeDisabled } from '../../../infra/db/sessions.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';
import { refusesContextManagement } from '../../../infra/llm/responsesChat.js';
import { fromResponsesInput, toResponsesInput } from '../../../infra/llm/responsesItems.js';
import {
  createResponse,
  type ResponseObject,
  type ResponseStreamEvent,
  type ResponsesBody,
  streamResponse,
} from '../../../infra/llm/responsesPassthrough.js';
import { sseFrame } from '../sse.js';
import { DropinFlow, DropinRequestError, type DropinTurn } from './conversationFlow.js';
import { checkStorable, type DropinDeps, Upstreams } from './upstream.js';

const SOURCE = 'openai-responses';

export type ResponsesAnswer = {
  /** The conversation the reply is stored in (null: a branch named by the reply, still streaming). */
  conversationId: string | null;
  /** Reasoning items of the client's input left out because a compaction changed what preceded them. */
  reasoningDropped: number;
} & ({ kind: 'json'; response: ResponseObject } | { kind: 'stream'; frames: AsyncIterable<string> });

/** SPEC §7 reading of a Responses usage (`input_tokens` is the whole input, cached tokens included). */
export function responsesUsage(usage: ResponseObject['usage'] | null | undefined): Usage | undefined {
  if (!usage) return undefined;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.total_tokens ?? usage.input_tokens + usage.output_tokens,
  };
}

/** The stored reply of a response: its output items as one assistant message. */
export function replyOfResponse(response: Pick<ResponseObject, 'output'>): ChatMessage {
  return fromResponsesInput(undefined, response.output)[0] ?? { role: 'assistant', content: '' };
}

/** The reply of a response to the store: with its reading, or without it when it carries a native checkpoint. */
function storeResponse(store: DropinTurn['store'], response: ResponseObject): Promise<string> {
  const checkpoint = compactionItemsOf(response.output ?? []).length > 0;
  // SPEC §15.1: that reading measured the input before the server compacted it; the next real reading counts.
  if (checkpoint) return store(replyOfResponse(response), undefined, { nativeCheckpoint: true });
  return store(replyOfResponse(response), responsesUsage(response.usage));
}

/** The client's events as the provider sent them; the reply (from `response.completed`) goes to the store first. */
async function* relay(events: AsyncIterable<ResponseStreamEvent>, store: DropinTurn['store']): AsyncGenerator<string> {
  try {
    for await (const event of events) {
      if (event.type === 'response.completed') await storeResponse(store, event.response);
      yield sseFrame(event.type, event);
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    yield sseFrame('error', {
      type: 'error',
      code: 'upstream_error',
      message: `the stream was interrupted: ${message}`,
    });
  }
}

function hasCompactionItems(input: unknown): boolean {
  return Array.isArray(input) && compactionItemsOf(input).length > 0;
}

function reasoningItems(input: unknown): number {
  return Array.isArray(input) ? input.filter((item) => (item as { type?: unknown })?.type === 'reasoning').length : 0;
}

export class OpenAIResponses {
  private readonly flow: DropinFlow;
  private readonly upstreams: Upstreams<'openai'>;

  constructor(private readonly deps: DropinDeps) {
    this.flow = new DropinFlow(deps.conversations, 'or', SOURCE);
    this.upstreams = new Upstreams(deps, 'openai', 'POST /v1/responses');
  }

  async create(tenantId: string, body: ResponsesBody, conversationHeader?: string): Promise<ResponsesAnswer> {
    if (body.previous_response_id !== undefined && body.previous_response_id !== null) {
      throw new DropinRequestError(
        'previous_response_id is not needed here: send the whole input (the gateway stores the conversation)',
        'previous_response_id',
      );
    }
    const history = fromResponsesInput(body.instructions, body.input);
    if (history.length === 0) throw new DropinRequestError('input must hold at least one message', 'input');
    checkStorable(history, (problem) => problem.replace(/^messages\[\d+\]\.message\.?/, 'input: '));
    const provider = this.upstreams.providerFor(body.model);
    // Refused before anything is stored: a provider without its key, a Codex app-server route (SPEC §15.2).
    const client = this.upstreams.clientFor(provider);
    const turn = await this.flow.begin(tenantId, history, conversationHeader, {
      model: body.model,
      provider: provider.id,
      tools: body.tools,
    });
    // SPEC §15.1 switching: compaction items the client holds came from a route that issues them; another route
    // gets the stored transcript instead (they stand in for history the client no longer sends).
    const foreign =
      !turn.compacted &&
      turn.native !== null &&
      hasCompactionItems(body.input) &&
      !nativeRouteEligible(provider.id, provider.baseUrl)
        ? (await loadTranscript(this.deps.conversations.db, tenantId, turn.native.sessionId)).map((r) => r.message)
        : null;
    const transcript = turn.compacted ?? foreign;
    const reasoningDropped = transcript ? reasoningItems(body.input) : 0;
    const upstream = transcript ? this.withCompacted(body, transcript, provider) : body;
    const native = await this.nativeField(tenantId, body, provider, turn);
    const send = <T>(call: (request: ResponsesBody) => Promise<T>) =>
      this.withNative(tenantId, upstream, native, turn, call);
    if (body.stream === true) {
      const events = await send((request) => streamResponse(client, provider.id, { ...request, stream: true }));
      return {
        kind: 'stream',
        conversationId: turn.conversationId,
        reasoningDropped,
        frames: relay(events, turn.store),
      };
    }
    const response = await send((request) => createResponse(client, provider.id, request));
    const conversationId = await storeResponse(turn.store, response);
    return { kind: 'json', conversationId, reasoningDropped, response };
  }

  /**
   * SPEC §15.1 on the client's request: the `context_management` field the gate lets us add (the conversation's
   * published threshold; never when the client set the field itself), or null.
   */
  private async nativeField(
    tenantId: string,
    body: ResponsesBody,
    provider: ProviderConfig,
    turn: DropinTurn,
  ): Promise<ReturnType<typeof contextManagementField> | null> {
    const threshold = turn.native?.compactThreshold ?? null;
    if (!turn.native || threshold === null || 'context_management' in body) return null;
    const route = { api: 'responses' as const, model: body.model, provider: provider.id, baseUrl: provider.baseUrl };
    if (!nativeCompactionGate({ codexResponsesNative: true }, { ...route, disabledForSession: false }).send)
      return null;
    const { db } = this.deps.conversations;
    if (await responsesNativeDisabled(db, tenantId, turn.native.sessionId)) return null;
    return contextManagementField(threshold);
  }

  /** The call with the field; when the provider refuses it: off for the session, and the same call once without. */
  private async withNative<T>(
    tenantId: string,
    request: ResponsesBody,
    native: ReturnType<typeof contextManagementField> | null,
    turn: DropinTurn,
    call: (request: ResponsesBody) => Promise<T>,
  ): Promise<T> {
    if (!native || !turn.native) return call(request);
    try {
      return await call({ ...request, context_management: native });
    } catch (err) {
      if (!refusesContextManagement(err)) throw err;
      await disableResponsesNative(this.deps.conversations.db, tenantId, turn.native.sessionId);
      return call(request);
    }
  }

  /** The request with the conversation's compacted, sanitised transcript as instructions and input. */
  private withCompacted(body: ResponsesBody, transcript: ChatMessage[], provider: ProviderConfig): ResponsesBody {
    const { messages } = prepareContext(transcript, {
      model: body.model,
      cachingRoute: provider.cachingRoute,
      cacheTtl: this.deps.cacheTtl,
    });
    const { instructions, input } = toResponsesInput(messages);
    const { instructions: _client, ...rest } = body;
    return { ...rest, ...(instructions !== undefined ? { instructions } : {}), input };
  }
}
