// `dctx`, the command line of durable-context (DESIGN.md §6): start the local stack, migrate, tenants and keys
// (create, list, revoke, rotate: cli/keyCommands.ts), import a transcript (progress bar), search, status, compact and
// compactions list / replay (cli/compactionCommands.ts), model; `temporal setup` (workers/cli/temporalSetup.ts) talks to Temporal itself. Talks to the HTTP gateway through clients/httpClient.ts; its other parts are in workers/cli/. Run it
// as `npx tsx workers/cli.ts <command>` or through `bin/dctx.js`. Environment (infra/config/env.ts): DCTX_URL, DCTX_KEY, DURABLE_CONTEXT_ADMIN_KEY, DCTX_DEBUG.
import { pathToFileURL } from 'node:url';
import { Command, Option } from 'commander';
import { createApiKey, createTenant, GatewayError, getStatus, search, switchModel } from '../clients/httpClient.js';
import { importTranscript } from '../clients/importTranscript.js';
import { TranscriptError } from '../clients/transcript.js';
import { MESSAGE_ROLES } from '../contracts/http/common.js';
import { SEARCH_SORTS } from '../contracts/http/search.js';
import type { Env } from '../infra/config/env.js';
import { type TemporalEnv, temporalTarget } from '../infra/temporal/connectionOptions.js';
import { registerCompactionCommands } from './cli/compactionCommands.js';
import { formatImportResult, formatSearchResults, formatStatus } from './cli/format.js';
import { registerKeyCommands } from './cli/keyCommands.js';
import {
  adminConnection,
  CliError,
  type ConnectionOptions,
  commaList,
  jsonObject,
  listOf,
  positiveInt,
  tenantConnection,
} from './cli/options.js';
import { progressReporter } from './cli/progress.js';
import { runScript } from './cli/runScript.js';
import { temporalSetup } from './cli/temporalSetup.js';

/** What the CLI reads from the environment (validated by infra/config/env.ts). */
export type CliEnv = Pick<Env, 'DCTX_URL' | 'DCTX_KEY' | 'DURABLE_CONTEXT_ADMIN_KEY'> & TemporalEnv;

const keyOption = () => new Option('--key <key>', 'tenant API key (dctx_...; env: DCTX_KEY)');

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}
const printJson = (value: unknown): void => print(JSON.stringify(value, null, 2));

export function buildProgram(environment: CliEnv): Command {
  const program = new Command('dctx')
    .description('durable-context: keeps long AI-agent conversations inside the model window')
    .addOption(new Option('--url <url>', 'gateway URL (env: DCTX_URL)').default(environment.DCTX_URL))
    .addOption(new Option('--admin-key <key>', 'admin key (tenants, keys; env: DURABLE_CONTEXT_ADMIN_KEY)'))
    .showHelpAfterError()
    .configureOutput({ outputError: (text, write) => write(text) });

  /** The connection options of a command: each key from its option, else from the environment. */
  const conn = (cmd: Command): ConnectionOptions => {
    const opts = cmd.optsWithGlobals<ConnectionOptions>();
    return {
      url: opts.url,
      key: opts.key ?? environment.DCTX_KEY,
      adminKey: opts.adminKey ?? environment.DURABLE_CONTEXT_ADMIN_KEY,
    };
  };

  program
    .command('start')
    .description('run the local stack (PostgreSQL, migrations, Temporal dev server, worker, gateway) until Ctrl-C')
    .action(async () => {
      process.exitCode = await runScript('workers/dev.ts');
    });

  program
    .command('migrate')
    .description('apply pending database migrations (DATABASE_URL or the local cluster)')
    .action(async () => {
      process.exitCode = await runScript('workers/migrate.ts');
    });

  program
    .command('temporal')
    .description('the Temporal cluster (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY)')
    .command('setup')
    .description('register the search attributes the workflows set (idempotent); run once per namespace before workers')
    .option('--create-namespace', 'create the namespace when it does not exist (self-hosted clusters)')
    .option(
      '--retention-days <n>',
      'retention of closed workflows of a created namespace',
      positiveInt('--retention-days'),
      3,
    )
    .action(async (opts: { createNamespace?: boolean; retentionDays: number }) => {
      await temporalSetup(temporalTarget(environment), {
        print,
        ...(opts.createNamespace ? { createNamespace: { retentionDays: opts.retentionDays } } : {}),
      });
    });

  const tenants = program.command('tenants').description('tenants (admin key)');
  tenants
    .command('create <id>')
    .description('create a tenant (idempotent); --key also issues an API key for it')
    .option('--name <name>', 'display name')
    .option('--policy <json>', 'compression policy, e.g. \'{"threshold": 0.6}\'', jsonObject)
    .option('--key', 'also issue an API key and print it (shown once)')
    .option('--label <label>', 'label of the issued key')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string,
        opts: { name?: string; policy?: Record<string, unknown>; key?: boolean; label?: string; json?: boolean },
        cmd: Command,
      ) => {
        const admin = adminConnection(conn(cmd));
        const tenant = await createTenant(admin, {
          id,
          ...(opts.name ? { name: opts.name } : {}),
          ...(opts.policy ? { policy: opts.policy } : {}),
        });
        const issued = opts.key
          ? await createApiKey(admin, id, opts.label !== undefined ? { label: opts.label } : {})
          : undefined;
        if (opts.json) return printJson(issued ? { tenant, key: issued } : { tenant });
        print(`tenant  ${tenant.id} (${tenant.name}), policy version ${tenant.policyVersion}`);
        if (Object.keys(tenant.policy).length) print(`policy  ${JSON.stringify(tenant.policy)}`);
        if (issued) print(`key     ${issued.key}\n        (shown once; use it as DCTX_KEY or --key)`);
      },
    );

  registerKeyCommands(program, conn, { print, printJson });

  program
    .command('import <transcript>')
    .description('replay a JSONL transcript into a conversation (a re-import of the same file changes nothing)')
    .addOption(keyOption())
    .option('--conversation <id>', 'conversation id (default: derived from the file name and content)')
    .option('--model <model>', 'model of the conversation')
    .option('--provider <provider>', 'provider of the model')
    .option('--context-length <n>', 'context window in tokens', positiveInt('--context-length'))
    .option('--batch <n>', 'most messages per request', positiveInt('--batch'), 50)
    .option('--usage-field <name>', 'field of a line that holds the provider usage', 'usage')
    .action(async (file: string, opts: Record<string, any>, cmd: Command) => {
      const c = tenantConnection(conn(cmd));
      const progress = progressReporter(file, print);
      try {
        const result = await importTranscript({
          url: c.url,
          key: c.key,
          file,
          batchSize: opts.batch,
          usageField: opts.usageField,
          ...(opts.conversation ? { conversationId: opts.conversation } : {}),
          ...(opts.model ? { model: opts.model } : {}),
          ...(opts.provider ? { provider: opts.provider } : {}),
          ...(opts.contextLength ? { contextLength: opts.contextLength } : {}),
          onProgress: progress.update,
        });
        progress.stop();
        print(formatImportResult(result));
      } finally {
        progress.stop();
      }
    });

  program
    .command('search <query>')
    .description("search the tenant's messages, archived (compacted) ones included")
    .addOption(keyOption())
    .option('--roles <list>', `comma-separated roles (${MESSAGE_ROLES.join(', ')})`, listOf('--roles', MESSAGE_ROLES))
    .option('--sources <list>', 'comma-separated session sources (e.g. import,api)', commaList)
    .addOption(new Option('--sort <order>', 'result order').choices(SEARCH_SORTS))
    .option('--limit <n>', 'most results (1-100)', positiveInt('--limit'))
    .option('--offset <n>', 'results to skip', (v: string) => (v === '0' ? 0 : positiveInt('--offset')(v)))
    .option('--include-inactive', 'also rows that are neither active nor compacted')
    .option('--json', 'print JSON')
    .action(async (q: string, opts: Record<string, any>, cmd: Command) => {
      const { results } = await search(tenantConnection(conn(cmd)), q, {
        roles: opts.roles,
        sources: opts.sources,
        sort: opts.sort,
        limit: opts.limit,
        offset: opts.offset,
        ...(opts.includeInactive ? { includeInactive: true } : {}),
      });
      if (opts.json) return printJson(results);
      print(formatSearchResults(results, { tty: process.stdout.isTTY === true, offset: opts.offset ?? 0 }));
    });

  program
    .command('status <conversationId>')
    .description('status of a conversation: tokens, threshold, compactions')
    .addOption(keyOption())
    .option('--json', 'print JSON')
    .action(async (conversationId: string, opts: { json?: boolean }, cmd: Command) => {
      const status = await getStatus(tenantConnection(conn(cmd)), conversationId);
      print(opts.json ? JSON.stringify(status, null, 2) : formatStatus(status));
    });

  program
    .command('model <conversationId> <model>')
    .description('switch the model of a conversation (SPEC §4.6): thresholds re-derived, the cache warning shown')
    .addOption(keyOption())
    .option('--provider <id>', "the provider serving the model (default: the conversation's)")
    .option(
      '--context-length <n>',
      'explicit window in tokens (like model.context_length)',
      positiveInt('--context-length'),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        conversationId: string,
        model: string,
        opts: { provider?: string; contextLength?: number; json?: boolean },
        cmd: Command,
      ) => {
        const status = await switchModel(tenantConnection(conn(cmd)), conversationId, {
          model,
          ...(opts.provider ? { provider: opts.provider } : {}),
          ...(opts.contextLength ? { contextLength: opts.contextLength } : {}),
        });
        print(opts.json ? JSON.stringify(status, null, 2) : formatStatus(status));
      },
    );

  registerCompactionCommands(program, conn, keyOption, print);

  return program;
}

/**
 * Parses argv and runs the command; every failure prints one line on stderr and sets exit code 1. The environment
 * is loaded here, so that an invalid variable is such a failure too (its message names the variable).
 */
export async function main(argv: readonly string[] = process.argv): Promise<void> {
  let environment: Env | undefined;
  try {
    ({ env: environment } = await import('../infra/config/env.js'));
    await buildProgram(environment).parseAsync([...argv]);
  } catch (err) {
    const known =
      err instanceof GatewayError ||
      err instanceof TranscriptError ||
      err instanceof CliError ||
      (err instanceof Error && err.name === 'EnvError');
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`error: ${message}\n`);
    if (!known && environment?.DCTX_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
