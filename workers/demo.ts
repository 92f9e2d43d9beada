// The demo of `npm run demo`: creates the tenant `demo`, imports the shipped sample conversations through the HTTP
// gateway (small windows, so compactions happen), then prints the compactions and a 2-character Japanese search.
// Every request goes through the gateway's typed client (clients/httpClient.ts).
import { join } from 'node:path';
import { createApiKey, createTenant, type GatewayConnection, listCompactions, search } from '../clients/httpClient.js';
import { type ImportResult, importTranscript } from '../clients/importTranscript.js';

export interface DemoOptions {
  url: string;
  adminKey: string;
  uiUrl: string | null;
  samplesDir: string;
  log: (line: string) => void;
}

export const DEMO_TENANT = 'demo';

export async function runDemo(options: DemoOptions): Promise<void> {
  const { url, adminKey, log } = options;
  const admin: GatewayConnection = { url, key: adminKey };
  await createTenant(admin, { id: DEMO_TENANT, name: 'Demo tenant' });
  const { key } = await createApiKey(admin, DEMO_TENANT, { label: 'demo' });
  const tenant: GatewayConnection = { url, key };
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

  const { compactions } = await listCompactions(tenant, { limit: 200 });
  log('');
  log(`Compactions (${compactions.length}):`);
  log('  conversation         #   trigger        status     tokens before → after   messages summarised');
  for (const c of [...compactions].reverse()) {
    const stats = c.stats;
    const tokens = stats?.tokensBefore !== undefined ? `${stats.tokensBefore} → ${stats.tokensAfter}` : '-';
    log(
      `  ${c.conversationId.padEnd(20)} ${String(c.seq).padStart(2)}  ${c.trigger.padEnd(14)} ${c.status.padEnd(10)} ${tokens.padEnd(22)}  ${stats?.droppedCount ?? '-'}`,
    );
  }

  const query = '圧縮';
  const { results } = await search(tenant, query, { limit: 3 });
  log('');
  log(`Search '${query}' (2-character Japanese query, archived messages included): ${results.length} shown`);
  for (const r of results) log(`  [${r.role}] ${r.snippet.replace(/\s+/g, ' ')}`);
  log('');
  if (options.uiUrl)
    log(`Temporal UI: ${options.uiUrl}/namespaces/default/workflows?query=TenantId%3D%22${DEMO_TENANT}%22`);
  log('Demo finished.');
}

function summaryOf({ status }: ImportResult) {
  return {
    activeMessages: status.activeMessages,
    compactions: status.compressionCount,
    contextTokens: status.contextTokens,
  };
}
