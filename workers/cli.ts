// `dctx`, the command line of durable-context (DESIGN.md §6): start the local stack, migrate, tenants and keys,
// import a transcript (progress bar), search, status, compactions list / replay. Talks to the HTTP gateway.
// Run it as `npx tsx workers/cli.ts <command>` or through `bin/dctx.js`.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import cliProgress from 'cli-progress';
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  createApiKey,
  createTenant,
  type GatewayConnection,
  GatewayError,
  getStatus,
  type ImportProgress,
  importTranscript,
  listCompactions,
  replayCompaction,
  search,
} from './cliClient.js';
import { formatCompactions, formatImportResult, formatReplay, formatSearchResults, formatStatus } from './cliFormat.js';
import { TranscriptError } from './transcript.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';
const COMPACTION_STATUSES = ['pending', 'running', 'committed', 'fallback', 'noop', 'aborted', 'rejected', 'failed'];
const ROLES = ['system', 'user', 'assistant', 'tool'];
const SORTS = ['relevance', 'newest', 'oldest'];

/** A usage error of the CLI itself (missing key, bad option value): printed as is, exit code 1. */
class CliError extends Error {}

interface ConnectionOptions {
  url: string;
  key?: string;
  adminKey?: string;
}

function tenantConnection(opts: ConnectionOptions): GatewayConnection {
  if (!opts.key) {
    throw new CliError(
      'missing tenant API key: pass --key <key> or set DCTX_KEY (issue one with `dctx keys create <tenantId>`)',
    );
  }
  return { url: opts.url, key: opts.key };
}

function adminConnection(opts: ConnectionOptions): GatewayConnection {
  if (!opts.adminKey) {
    throw new CliError('missing admin key: pass --admin-key <key> or set DURABLE_CONTEXT_ADMIN_KEY');
  }
  return { url: opts.url, key: opts.adminKey };
}

function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return n;
  };
}

const commaList = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function listOf(name: string, allowed: readonly string[]) {
  return (value: string): string[] => {
    const items = commaList(value);
    const bad = items.filter((s) => !allowed.includes(s));
    if (bad.length || items.length === 0) {
      throw new InvalidArgumentError(`${name} must be a comma-separated list of ${allowed.join(', ')}`);
    }
    return items;
  };
}

function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(`not valid JSON (${(err as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InvalidArgumentError('must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

const keyOption = () => new Option('--key <key>', 'tenant API key (dctx_...)').env('DCTX_KEY');

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}
const printJson = (value: unknown): void => print(JSON.stringify(value, null, 2));

/** Runs a TypeScript entry point of this project under tsx with inherited stdio; resolves with its exit code. */
function runScript(relativePath: string): Promise<number> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const loader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const script = fileURLToPath(new URL(relativePath, new URL('..', import.meta.url)));
  const child = spawn(process.execPath, ['--import', loader, script], { cwd: root, stdio: 'inherit' });
  // Ctrl-C reaches the child through the terminal; keep this process alive until the child has stopped.
  const ignore = () => undefined;
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  const onTerm = forward('SIGTERM');
  const onHup = forward('SIGHUP');
  process.on('SIGINT', ignore);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      process.off('SIGTERM', onTerm);
      process.off('SIGHUP', onHup);
      resolve(code ?? (signal ? 128 + 2 : 1));
    });
  });
}

function progressReporter(file: string): { update: (p: ImportProgress) => void; stop: () => void } {
  if (process.stdout.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `Importing ${file} |{bar}| {value}/{total} messages · batch {batch}/{batches}{state}`,
        stream: process.stdout,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update: (p) => {
        const payload = {
          batch: p.sentBatches,
          batches: p.totalBatches,
          state: p.waiting ? ' · waiting for processing…' : '',
        };
        if (!started) {
          bar.start(p.totalMessages, p.sentMessages, payload);
          started = true;
        } else bar.update(p.sentMessages, payload);
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  let lastDecile = -1;
  return {
    update: (p) => {
      if (p.waiting) {
        print(
          `waiting for the conversation to process the import (${p.totalMessages - p.sentMessages} last messages sent)`,
        );
        return;
      }
      const decile = p.totalMessages ? Math.floor((p.sentMessages / p.totalMessages) * 10) : 10;
      if (decile === lastDecile) return;
      lastDecile = decile;
      print(`sent ${p.sentMessages}/${p.totalMessages} messages (batch ${p.sentBatches}/${p.totalBatches})`);
    },
    stop: () => undefined,
  };
}

export function buildProgram(): Command {
  const program = new Command('dctx')
    .description('durable-context: keeps long AI-agent conversations inside the model window')
    .addOption(new Option('--url <url>', 'gateway URL').env('DCTX_URL').default(DEFAULT_URL))
    .addOption(new Option('--admin-key <key>', 'admin key (tenants, keys)').env('DURABLE_CONTEXT_ADMIN_KEY'))
    .showHelpAfterError()
    .configureOutput({ outputError: (text, write) => write(text) });

  const conn = (cmd: Command) => cmd.optsWithGlobals<ConnectionOptions>();

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
        const issued = opts.key ? await createApiKey(admin, id, opts.label) : undefined;
        if (opts.json) return printJson(issued ? { tenant, key: issued } : { tenant });
        print(`tenant  ${tenant.id} (${tenant.name}), policy version ${tenant.policyVersion}`);
        if (Object.keys(tenant.policy).length) print(`policy  ${JSON.stringify(tenant.policy)}`);
        if (issued) print(`key     ${issued.key}\n        (shown once; use it as DCTX_KEY or --key)`);
      },
    );

  const keys = program.command('keys').description('tenant API keys (admin key)');
  keys
    .command('create <tenantId>')
    .description('issue an API key for a tenant (shown once)')
    .option('--label <label>', 'label stored with the key')
    .option('--json', 'print JSON')
    .action(async (tenantId: string, opts: { label?: string; json?: boolean }, cmd: Command) => {
      const issued = await createApiKey(adminConnection(conn(cmd)), tenantId, opts.label);
      if (opts.json) return printJson(issued);
      print(issued.key);
    });

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
      const progress = progressReporter(file);
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
    .option('--roles <list>', `comma-separated roles (${ROLES.join(', ')})`, listOf('--roles', ROLES))
    .option('--sources <list>', 'comma-separated session sources (e.g. import,api)', commaList)
    .addOption(new Option('--sort <order>', 'result order').choices(SORTS))
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

  return program;
}

/** Parses argv and runs the command; every failure prints one line on stderr and sets exit code 1. */
export async function main(argv: readonly string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (err) {
    const known = err instanceof GatewayError || err instanceof TranscriptError || err instanceof CliError;
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`error: ${message}\n`);
    if (!known && process.env.DCTX_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
