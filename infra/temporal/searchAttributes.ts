// The custom search attributes of DESIGN.md §3 on a running cluster: registers the missing ones (idempotent; used by
// `dctx temporal setup` and the test harness) and checks them (the worker refuses to start without them, since a
// workflow that sets an unregistered attribute fails its tasks). Connects with the options of every other process
// (infra/temporal/connectionOptions.ts), so that a TLS / mTLS / API-key cluster is reached the same way.
import { Connection, isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';

// CommonJS package: a default import works under plain Node ESM as well as under bundlers.
const { temporal } = proto;

import type { TemporalConnectionOptions } from './connectionOptions.js';
import type { SearchAttributeSpec } from './devServer.js';

const TYPE_CODES: Record<SearchAttributeSpec['type'], number> = {
  Text: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};
const TYPE_NAMES = new Map(Object.entries(TYPE_CODES).map(([name, code]) => [code, name]));

type OperatorService = Pick<Connection['operatorService'], 'listSearchAttributes' | 'addSearchAttributes'>;

/** What a namespace holds of the wanted attributes. */
export interface SearchAttributeCheck {
  present: SearchAttributeSpec[];
  missing: SearchAttributeSpec[];
  /** Registered under another type: no registration can fix that (an operator must rename or remove it). */
  conflicting: Array<SearchAttributeSpec & { registeredAs: string }>;
}

export async function checkSearchAttributes(
  operator: OperatorService,
  namespace: string,
  attributes: readonly SearchAttributeSpec[],
): Promise<SearchAttributeCheck> {
  const listed = await operator.listSearchAttributes({ namespace });
  const existing = listed.customAttributes ?? {};
  const check: SearchAttributeCheck = { present: [], missing: [], conflicting: [] };
  for (const attribute of attributes) {
    const code = existing[attribute.name];
    if (code === undefined || code === null) check.missing.push(attribute);
    else if (code === TYPE_CODES[attribute.type]) check.present.push(attribute);
    else check.conflicting.push({ ...attribute, registeredAs: TYPE_NAMES.get(code) ?? `type ${code}` });
  }
  return check;
}

export class SearchAttributeError extends Error {
  override name = 'SearchAttributeError';
}

const describeConflicts = (namespace: string, check: SearchAttributeCheck) =>
  check.conflicting
    .map(
      (a) =>
        `search attribute ${a.name} is registered as ${a.registeredAs} in namespace ${namespace}, expected ${a.type}`,
    )
    .join('; ');

/** gRPC codes of an operator call the cluster does not let this identity make (e.g. a namespace-scoped API key). */
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNIMPLEMENTED = 12;
const isNotAllowed = (err: unknown) =>
  isGrpcServiceError(err) && (err.code === GRPC_PERMISSION_DENIED || err.code === GRPC_UNIMPLEMENTED);

/** Adds the missing attributes of `namespace`; returns what was already there and what it added. */
export async function registerSearchAttributes(
  operator: OperatorService,
  namespace: string,
  attributes: readonly SearchAttributeSpec[],
): Promise<{ added: SearchAttributeSpec[]; present: SearchAttributeSpec[] }> {
  const check = await checkSearchAttributes(operator, namespace, attributes);
  if (check.conflicting.length > 0) throw new SearchAttributeError(describeConflicts(namespace, check));
  if (check.missing.length > 0) {
    try {
      await operator.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(check.missing.map((a) => [a.name, TYPE_CODES[a.type]])),
      });
    } catch (err) {
      if (!isNotAllowed(err)) throw err;
      throw new SearchAttributeError(
        `this identity may not add search attributes to namespace ${namespace} (${(err as Error).message}); ` +
          `add them where the namespace is administered (on Temporal Cloud: its console or \`tcld\`): ` +
          check.missing.map((a) => `${a.name} (${a.type})`).join(', '),
      );
    }
  }
  return { added: check.missing, present: check.present };
}

/**
 * Throws naming what is missing or mistyped, and how to fix it; the worker calls it before it polls. A cluster that
 * does not let this identity list them is not a reason to stop: `warn` says the check was skipped.
 */
export async function requireSearchAttributes(
  operator: OperatorService,
  namespace: string,
  attributes: readonly SearchAttributeSpec[],
  warn: (message: string) => void = console.warn,
): Promise<void> {
  let check: SearchAttributeCheck;
  try {
    check = await checkSearchAttributes(operator, namespace, attributes);
  } catch (err) {
    if (!isNotAllowed(err)) throw err;
    warn(`Search attributes of namespace ${namespace} not checked: ${(err as Error).message}`);
    return;
  }
  if (check.conflicting.length > 0) throw new SearchAttributeError(describeConflicts(namespace, check));
  if (check.missing.length > 0) {
    throw new SearchAttributeError(
      `search attributes not registered in namespace ${namespace}: ${check.missing.map((a) => a.name).join(', ')}; ` +
        'run `dctx temporal setup` with the same TEMPORAL_* environment',
    );
  }
}

/** Connects with `options` and registers the missing attributes (the test harness's global setup). */
export async function ensureSearchAttributes(
  options: TemporalConnectionOptions,
  namespace: string,
  attributes: readonly SearchAttributeSpec[],
): Promise<{ added: SearchAttributeSpec[]; present: SearchAttributeSpec[] }> {
  const connection = await Connection.connect(options);
  try {
    return await registerSearchAttributes(connection.operatorService, namespace, attributes);
  } finally {
    await connection.close();
  }
}
