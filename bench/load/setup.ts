// Tenants and conversations over HTTP, as a client of the product creates them: the admin API (POST /v1/tenants, then
// an API key per tenant) and POST /v1/conversations with the tenant's key, from `concurrency` callers at once. The
// conversation creations are timed: their rate and latency are figures of the benchmark.
import { performance } from 'node:perf_hooks';
import { type Answer, isSuccess, type JsonHttp, outcomeOf } from './http.js';
import { Tally } from './stats.js';

export interface BenchTenant {
  id: string;
  key: string;
}

export interface BenchConversation {
  id: string;
  index: number;
  tenant: BenchTenant;
  /** The automatic compaction threshold the created conversation reported (0: not published yet). */
  thresholdTokens: number;
}

export interface Creation {
  conversations: BenchConversation[];
  latencies: number[];
  seconds: number;
  outcomes: Tally;
}

function check(answer: Answer, what: string): void {
  if (!isSuccess(answer)) {
    throw new Error(`${what}: ${outcomeOf(answer)} ${JSON.stringify(answer.body ?? answer.errorMessage)}`);
  }
}

/** `count` tenants `<prefix>-t<i>` with one API key each (sequential: a handful). */
export async function createTenants(
  http: JsonHttp,
  adminKey: string,
  prefix: string,
  count: number,
  policy?: Record<string, unknown>,
): Promise<BenchTenant[]> {
  const tenants: BenchTenant[] = [];
  for (let i = 0; i < count; i++) {
    const id = `${prefix}-t${i}`;
    const created = await http.request('POST', '/v1/tenants', {
      token: adminKey,
      body: { id, name: `load bench tenant ${i}`, ...(policy ? { policy } : {}) },
    });
    check(created, `create tenant ${id}`);
    const key = await http.request('POST', `/v1/tenants/${id}/keys`, { token: adminKey, body: { label: 'bench' } });
    check(key, `issue a key for ${id}`);
    tenants.push({ id, key: key.body.key as string });
  }
  return tenants;
}

export interface ConversationSpec {
  /** Body fields besides conversationId (model, provider, contextLength). */
  body?: (index: number) => Record<string, unknown>;
}

/** Creates `count` conversations `<prefix>-c<i>`, spread round-robin over the tenants; a failure is retried twice. */
export async function createConversations(
  http: JsonHttp,
  tenants: readonly BenchTenant[],
  prefix: string,
  count: number,
  concurrency: number,
  spec: ConversationSpec = {},
): Promise<Creation> {
  const conversations: BenchConversation[] = new Array(count);
  const latencies: number[] = [];
  const outcomes = new Tally();
  let next = 0;
  const started = performance.now();
  const caller = async () => {
    for (;;) {
      const index = next++;
      if (index >= count) return;
      const tenant = tenants[index % tenants.length]!;
      const id = `${prefix}-c${index}`;
      for (let attempt = 1; ; attempt++) {
        const answer = await http.request('POST', '/v1/conversations', {
          token: tenant.key,
          body: { conversationId: id, title: `load bench ${index}`, ...(spec.body?.(index) ?? {}) },
          timeoutMs: 60_000,
        });
        outcomes.add(outcomeOf(answer));
        if (isSuccess(answer)) {
          latencies.push(answer.ms);
          conversations[index] = {
            id,
            index,
            tenant,
            thresholdTokens: Number(answer.body?.status?.thresholdTokens ?? 0),
          };
          break;
        }
        if (attempt >= 3) check(answer, `create conversation ${id}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, caller));
  return { conversations, latencies, seconds: (performance.now() - started) / 1000, outcomes };
}
