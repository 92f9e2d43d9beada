// Cache breakpoints of a drop-in request that goes upstream as the client sent it — Anthropic Messages, and Chat
// Completions to Claude over a caching route (withOwnChatBreakpoints, at the end) — (issue #12,
// "cache-neutral by construction"). The client's own breakpoints are kept exactly as set, and then none are added. A
// client that set none anywhere (tools, system, messages, the request's own `cache_control`) gets two of ours when
// SPEC §12.1 turns caching on for the model and route: on the system prompt and on the last block of the last
// message, with the TTL of SPEC §12.2 — not §12.2's system + last 3 (my call, the issue asks for this): a marker
// that moves off a message between two requests changes the bytes of a prefix the earlier request cached, while a
// marker on the last message only leaves every earlier request's bytes, up to its last breakpoint, as the next request
// repeats them (the provider finds the earlier entry by looking back from the new breakpoint). To keep those bytes
// stable, every message's non-empty string content is sent as the one text block it stands for, in every request.
import type { CacheTtl } from '../../../engine/config.js';
import { promptCachingState } from '../../../engine/index.js';
import type { MessagesBody } from '../../../infra/llm/anthropicPassthrough.js';
import type { ProviderConfig } from '../../../infra/llm/providers.js';

type Block = Record<string, unknown>;
/** Blocks that cannot carry a breakpoint. */
const UNMARKABLE = new Set(['thinking', 'redacted_thinking']);

/** What both dialects' requests have where a breakpoint can be. */
type MarkableBody = { model: string; messages: unknown; tools?: unknown; system?: unknown };

/** Breakpoints the client set anywhere in the request. */
export function clientBreakpoints(body: MarkableBody): number {
  let count = 0;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'cache_control' && inner !== null && inner !== undefined) count += 1;
      else if (key !== 'input' && key !== 'input_schema') visit(inner);
    }
  };
  visit({ cache_control: (body as { cache_control?: unknown }).cache_control, ...pick(body) });
  return count;
}

function pick(body: MarkableBody): Record<string, unknown> {
  const { tools, system, messages } = body as { tools?: unknown; system?: unknown; messages?: unknown };
  return { tools, system, messages };
}

const textBlock = (text: string): Block => ({ type: 'text', text });
const marker = (ttl: CacheTtl): Block => (ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' });

/** `blocks` with a breakpoint on the last one that can carry it (a non-empty text or any other content block). */
function markLast(blocks: Block[], ttl: CacheTtl): { blocks: Block[]; marked: boolean } {
  const last = blocks.at(-1);
  if (!last || UNMARKABLE.has(String(last.type)) || (last.type === 'text' && last.text === '')) {
    return { blocks, marked: false };
  }
  return { blocks: [...blocks.slice(0, -1), { ...last, cache_control: marker(ttl) }], marked: true };
}

/** The request as it goes upstream: the client's own, with our breakpoints when it set none (see above). */
export function withOwnBreakpoints(
  body: MessagesBody,
  provider: Pick<ProviderConfig, 'cachingRoute'>,
  cacheTtl: CacheTtl | null,
): { body: MessagesBody; added: number } {
  const caching = promptCachingState({ model: body.model, provider: provider.cachingRoute ?? undefined, cacheTtl });
  if (!caching.enabled || caching.ttl === null || clientBreakpoints(body) > 0) return { body, added: 0 };
  const ttl = caching.ttl;
  let added = 0;
  const out: Record<string, unknown> = { ...body };
  const system = (body as { system?: unknown }).system;
  if (typeof system === 'string' ? system !== '' : Array.isArray(system) && system.length > 0) {
    const marked = markLast(typeof system === 'string' ? [textBlock(system)] : (system as Block[]), ttl);
    out.system = marked.blocks;
    added += marked.marked ? 1 : 0;
  }
  const messages = (body.messages as Array<Record<string, unknown>>).map((message) =>
    typeof message.content === 'string' && message.content !== ''
      ? { ...message, content: [textBlock(message.content)] }
      : message,
  );
  const last = messages.at(-1);
  if (last && Array.isArray(last.content)) {
    const marked = markLast(last.content as Block[], ttl);
    messages[messages.length - 1] = { ...last, content: marked.blocks };
    added += marked.marked ? 1 : 0;
  }
  out.messages = messages;
  return { body: out as MessagesBody, added };
}

/** A Chat Completions message whose content is a non-empty string, as the one text part it stands for. */
const asParts = (message: Block): Block =>
  typeof message.content === 'string' && message.content !== ''
    ? { ...message, content: [textBlock(message.content)] }
    : message;

/**
 * The same for a drop-in Chat Completions request to Claude over a route that caches through OpenAI's format
 * (SPEC §12.1: OpenRouter): markers on the parts of the messages (SPEC §12.2 step 7), on the leading system (or
 * developer) message and on the newest message that can carry one — not a tool result, which only Anthropic's own
 * API marks (§12.2 step 4). A client that set any marker, or a route that does not cache, gets its own request.
 */
export function withOwnChatBreakpoints<B extends MarkableBody>(
  body: B,
  provider: Pick<ProviderConfig, 'cachingRoute'>,
  cacheTtl: CacheTtl | null,
): { body: B; added: number } {
  const caching = promptCachingState({ model: body.model, provider: provider.cachingRoute ?? undefined, cacheTtl });
  if (!caching.enabled || caching.ttl === null || caching.nativeAnthropic || clientBreakpoints(body) > 0) {
    return { body, added: 0 };
  }
  const ttl = caching.ttl;
  const messages = (body.messages as Block[]).map(asParts);
  const carries = (message: Block) => message.role !== 'tool' && Array.isArray(message.content);
  const first = messages[0];
  const marks = new Set<number>();
  if (first && (first.role === 'system' || first.role === 'developer') && carries(first)) marks.add(0);
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Block;
    if (message.role === 'system' || message.role === 'developer' || !carries(message)) continue;
    marks.add(i);
    break;
  }
  let added = 0;
  for (const i of marks) {
    const message = messages[i] as Block;
    const marked = markLast(message.content as Block[], ttl);
    messages[i] = { ...message, content: marked.blocks };
    added += marked.marked ? 1 : 0;
  }
  return { body: { ...body, messages } as B, added };
}
