// `dctx compact` (a manual compaction, SPEC §7.6 `/compress`: it waits for the outcome) and `dctx compactions …`
// (list the records, newest first; replay a fallback, SPEC §13.7). Tenant key.
import type { Command, Option } from 'commander';
import { compactConversation, listCompactions, replayCompaction } from '../../clients/httpClient.js';
import { COMPACTION_STATUSES } from '../../contracts/compaction.js';
import { formatCompactionReport, formatCompactions, formatReplay } from './format.js';
import { type ConnectionOptions, listOf, positiveInt, tenantConnection } from './options.js';

export function registerCompactionCommands(
  program: Command,
  conn: (cmd: Command) => ConnectionOptions,
  keyOption: () => Option,
  print: (text: string) => void,
): void {
  program
    .command('compact <conversationId>')
    .description('compact a conversation now (like /compress) and print the outcome')
    .addOption(keyOption())
    .option('--focus <topic>', 'what the summary should keep in focus')
    .option('--json', 'print JSON')
    .action(async (conversationId: string, opts: { focus?: string; json?: boolean }, cmd: Command) => {
      const report = await compactConversation(tenantConnection(conn(cmd)), conversationId, opts.focus);
      print(opts.json ? JSON.stringify(report, null, 2) : formatCompactionReport(report));
      if (report.status === 'failed' || report.status === 'aborted') process.exitCode = 1;
    });

  const compactions = program.command('compactions').description('compaction records');
  compactions
    .command('list')
    .description('list compactions, newest first (* = replayable)')
    .addOption(keyOption())
    .option(
      '--status <list>',
      'comma-separated statuses, e.g. fallback,failed,aborted',
      listOf('--status', COMPACTION_STATUSES),
    )
    .option('--limit <n>', 'most rows (1-200)', positiveInt('--limit'))
    .option('--json', 'print JSON')
    .action(async (opts: { status?: string[]; limit?: number; json?: boolean }, cmd: Command) => {
      const { compactions: rows } = await listCompactions(tenantConnection(conn(cmd)), {
        ...(opts.status ? { status: opts.status } : {}),
        ...(opts.limit ? { limit: opts.limit } : {}),
      });
      print(opts.json ? JSON.stringify(rows, null, 2) : formatCompactions(rows));
    });
  compactions
    .command('replay <compactionId>')
    .description('regenerate the summary of a fallback / failed / aborted compaction with the current summarizer')
    .addOption(keyOption())
    .option('--json', 'print JSON')
    .action(async (compactionId: string, opts: { json?: boolean }, cmd: Command) => {
      const result = await replayCompaction(tenantConnection(conn(cmd)), compactionId);
      print(opts.json ? JSON.stringify(result, null, 2) : formatReplay(result));
      if (result.status === 'failed') process.exitCode = 1;
    });
}
