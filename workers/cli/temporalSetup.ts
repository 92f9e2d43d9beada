// `dctx temporal setup` (issue #14 §7, DESIGN.md §3): prepares a Temporal cluster for the workers — the namespace
// (created only when asked: `--create-namespace`, a self-hosted cluster) and the search attributes of
// workflows/searchAttributes.ts (missing ones added, present ones left, one of another type refused). Idempotent;
// connects with the options of every other process (infra/temporal/connectionOptions.ts) and prints what it did.
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msNumberToTs } from '@temporalio/common/lib/time.js';
import { connectExplained, type TemporalTarget } from '../../infra/temporal/connectionOptions.js';
import type { SearchAttributeSpec } from '../../infra/temporal/devServer.js';
import { checkSearchAttributes, registerSearchAttributes } from '../../infra/temporal/searchAttributes.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/searchAttributes.js';
import { CliError } from './options.js';

const GRPC_NOT_FOUND = 5;
const GRPC_ALREADY_EXISTS = 6;
/** A namespace just created reaches every service of the cluster within its namespace cache refresh (~10 s). */
const NEW_NAMESPACE_WAIT_MS = 60_000;

export interface TemporalSetupOptions {
  /** Create the namespace when it does not exist, with this retention of closed workflows (days). */
  createNamespace?: { retentionDays: number };
  print: (line: string) => void;
  attributes?: readonly SearchAttributeSpec[];
}

const isNotFound = (err: unknown) => isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND;

async function namespaceExists(connection: Connection, namespace: string): Promise<boolean> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

async function createNamespace(connection: Connection, namespace: string, retentionDays: number): Promise<boolean> {
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msNumberToTs(retentionDays * 86_400_000),
    });
    return true;
  } catch (err) {
    // Another setup created it meanwhile: as good.
    if (isGrpcServiceError(err) && err.code === GRPC_ALREADY_EXISTS) return false;
    throw err;
  }
}

/** Retries `run` while the namespace is not yet known to the service it reaches (a namespace just created). */
async function whileNamespaceIsNew<T>(run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + NEW_NAMESPACE_WAIT_MS;
  for (;;) {
    try {
      return await run();
    } catch (err) {
      if (!isNotFound(err) || Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

export async function temporalSetup(target: TemporalTarget, options: TemporalSetupOptions): Promise<void> {
  const { namespace } = target;
  const attributes = options.attributes ?? SEARCH_ATTRIBUTES;
  options.print(`Temporal: ${target.description}`);
  const connection = await connectExplained(target, () =>
    Connection.connect({ ...target.connection, connectTimeout: '10 seconds' }),
  );
  try {
    let created = false;
    if (!(await namespaceExists(connection, namespace))) {
      if (!options.createNamespace) {
        throw new CliError(
          `namespace ${namespace} does not exist: create it (\`dctx temporal setup --create-namespace\` on a ` +
            'self-hosted cluster, the Temporal Cloud console or `tcld` on Temporal Cloud)',
        );
      }
      created = await createNamespace(connection, namespace, options.createNamespace.retentionDays);
    }
    options.print(
      created
        ? `namespace ${namespace}: created (retention ${options.createNamespace?.retentionDays} days)`
        : `namespace ${namespace}: exists`,
    );
    const { added, present } = await whileNamespaceIsNew(() =>
      registerSearchAttributes(connection.operatorService, namespace, attributes),
    );
    // Registration is visible to workflows once listed (the dev server's launcher waits the same way).
    const deadline = Date.now() + NEW_NAMESPACE_WAIT_MS;
    while (added.length > 0) {
      const check = await checkSearchAttributes(connection.operatorService, namespace, attributes);
      if (check.missing.length === 0) break;
      if (Date.now() > deadline) {
        throw new Error(`search attributes added but not listed: ${check.missing.map((a) => a.name).join(', ')}`);
      }
      await sleep(250);
    }
    for (const attribute of attributes) {
      const done = added.includes(attribute) ? 'added' : present.includes(attribute) ? 'already registered' : '?';
      options.print(`search attribute ${attribute.name} (${attribute.type}): ${done}`);
    }
    options.print(
      added.length > 0
        ? `${added.length} search attribute(s) added, ${present.length} already registered`
        : `nothing to do: all ${present.length} search attributes already registered`,
    );
  } finally {
    await connection.close();
  }
}
