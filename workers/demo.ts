// The demo of `npm run demo`: creates the tenant `demo`, imports the shipped sample conversations through the HTTP
// gateway (small windows, so compactions happen), then prints the compactions and a 2-character Japanese search.
import { join } from 'node:path';
import { importTranscript } from './cliClient.js';

export interface DemoOptions {
  url: string;
  adminKey: string;
  uiUrl: string | null;
  samplesDir: string;
  log: (line: string) => void;
}

async function request(url: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json().catch(() => null)) as any;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${json?.message ?? ''}`);
  return json;
}

export const DEMO_TENANT = 'demo';

export async function runDemo(options: DemoOptions): Promise<void> {
  const { url, adminKey, log } = options;
  await request(url, adminKey, 'POST', '/v1/tenants', { id: DEMO_TENANT, name: 'Demo tenant' });
  const { key } = await request(url, adminKey, 'POST', `/v1/tenants/${DEMO_TENANT}/keys`, { label: 'demo' });
  log(`Demo tenant '${DEMO_TENANT}', API key: ${key}`);

  const samples = [
    {
      file: 'coding-agent.en.jsonl',
      conversationId: 'demo-coding-agent',
      model: 'demo-coder-128k',
      contextLength: 128_000,
    },
    {
      file: 'long-conversation.ja.jsonl',
      conversationId: 'demo-japanese',
      model: 'demo-chat-64k',
      contextLength: 64_000,
    },
  ];
  for (const sample of samples) {
    log(
      `Importing samples/${sample.file} into conversation '${sample.conversationId}' (${sample.contextLength.toLocaleString('en-US')}-token window)...`,
    );
    const result = await importTranscript({
      url,
      key,
      file: join(options.samplesDir, sample.file),
      conversationId: sample.conversationId,
      model: sample.model,
      contextLength: sample.contextLength,
    });
    log(`  done: ${JSON.stringify(summaryOf(result))}`);
  }

  const { compactions } = await request(url, key, 'GET', '/v1/compactions?limit=200');
  log('');
  log(`Compactions (${compactions.length}):`);
  log('  conversation         #   trigger        status     tokens before → after   messages summarised');
  for (const c of [...compactions].reverse()) {
    const stats = c.stats ?? {};
    const tokens = stats.tokensBefore !== undefined ? `${stats.tokensBefore} → ${stats.tokensAfter}` : '-';
    log(
      `  ${String(c.conversationId).padEnd(20)} ${String(c.seq).padStart(2)}  ${String(c.trigger).padEnd(14)} ${String(c.status).padEnd(10)} ${tokens.padEnd(22)}  ${stats.droppedCount ?? '-'}`,
    );
  }

  const query = '圧縮';
  const { results } = await request(url, key, 'GET', `/v1/search?q=${encodeURIComponent(query)}&limit=3`);
  log('');
  log(`Search '${query}' (2-character Japanese query, archived messages included): ${results.length} shown`);
  for (const r of results) log(`  [${r.role}] ${String(r.snippet).replace(/\s+/g, ' ')}`);
  log('');
  if (options.uiUrl)
    log(`Temporal UI: ${options.uiUrl}/namespaces/default/workflows?query=TenantId%3D%22${DEMO_TENANT}%22`);
  log('Demo finished.');
}

function summaryOf(result: unknown): unknown {
  const r = result as
    | { status?: { activeMessages?: number; compressionCount?: number; contextTokens?: number } }
    | undefined;
  const s = r?.status ?? (result as Record<string, unknown>);
  return { activeMessages: s?.activeMessages, compactions: s?.compressionCount, contextTokens: s?.contextTokens };
}
