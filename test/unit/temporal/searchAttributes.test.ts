// The search attribute check and registration (issue #14 §7) against a scripted operator service: what is added,
// what a mistyped attribute, a missing one and a cluster that refuses the operator calls (a namespace-scoped API
// key) lead to. The real service is exercised by test/integration/ops/temporalSetup.test.ts.
import proto from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import {
  registerSearchAttributes,
  requireSearchAttributes,
  SearchAttributeError,
} from '../../../infra/temporal/searchAttributes.js';
import { SEARCH_ATTRIBUTES } from '../../../workflows/searchAttributes.js';

const { IndexedValueType } = proto.temporal.api.enums.v1;
const KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
const INT = IndexedValueType.INDEXED_VALUE_TYPE_INT;
const ALL = Object.fromEntries(SEARCH_ATTRIBUTES.map((a) => [a.name, a.type === 'Int' ? INT : KEYWORD]));

/** An error shaped as both Temporal connections throw them (code, details, metadata). */
function grpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code, details: message, metadata: {} });
}

function operator(registered: Record<string, number>, failures: { list?: Error; add?: Error } = {}) {
  const added: Array<Record<string, number>> = [];
  return {
    added,
    listSearchAttributes: async () => {
      if (failures.list) throw failures.list;
      return { customAttributes: { ...registered } };
    },
    addSearchAttributes: async (request: { searchAttributes?: Record<string, number> | null }) => {
      if (failures.add) throw failures.add;
      added.push({ ...request.searchAttributes });
      return {};
    },
  } as any;
}

describe('requireSearchAttributes (the worker, before it polls)', () => {
  it('passes when every attribute is registered with its type', async () => {
    await expect(requireSearchAttributes(operator(ALL), 'prod', SEARCH_ATTRIBUTES)).resolves.toBeUndefined();
  });

  it('names the missing ones and the command that registers them', async () => {
    const { Model: _model, ContextTokens: _tokens, ...rest } = ALL;
    await expect(requireSearchAttributes(operator(rest), 'prod', SEARCH_ATTRIBUTES)).rejects.toThrow(
      new SearchAttributeError(
        'search attributes not registered in namespace prod: Model, ContextTokens; run `dctx temporal setup` with the ' +
          'same TEMPORAL_* environment',
      ),
    );
  });

  it('names one registered under another type', async () => {
    await expect(
      requireSearchAttributes(operator({ ...ALL, ContextTokens: KEYWORD }), 'prod', SEARCH_ATTRIBUTES),
    ).rejects.toThrow('search attribute ContextTokens is registered as Keyword in namespace prod, expected Int');
  });

  it('warns and goes on when the cluster does not let it list them (permission denied, unimplemented)', async () => {
    for (const code of [7, 12]) {
      const warnings: string[] = [];
      const denied = operator(ALL, { list: grpcError(code, 'Request unauthorized.') });
      await requireSearchAttributes(denied, 'prod', SEARCH_ATTRIBUTES, (line) => warnings.push(line));
      expect(warnings).toEqual(['Search attributes of namespace prod not checked: Request unauthorized.']);
    }
  });

  it('fails on any other error (a namespace that does not exist)', async () => {
    const missing = operator(ALL, { list: grpcError(5, 'Namespace prod is not found.') });
    await expect(requireSearchAttributes(missing, 'prod', SEARCH_ATTRIBUTES, () => undefined)).rejects.toThrow(
      'Namespace prod is not found.',
    );
  });
});

describe('registerSearchAttributes (dctx temporal setup)', () => {
  it('adds only the missing ones, with their types', async () => {
    const { SessionId: _s, CompactionCount: _c, ...rest } = ALL;
    const service = operator(rest);
    const result = await registerSearchAttributes(service, 'prod', SEARCH_ATTRIBUTES);
    expect(result.added.map((a) => a.name)).toEqual(['SessionId', 'CompactionCount']);
    expect(result.present).toHaveLength(6);
    expect(service.added).toEqual([{ SessionId: KEYWORD, CompactionCount: INT }]);
  });

  it('adds nothing when all are there', async () => {
    const service = operator(ALL);
    expect((await registerSearchAttributes(service, 'prod', SEARCH_ATTRIBUTES)).added).toEqual([]);
    expect(service.added).toEqual([]);
  });

  it('refuses to add anything beside a mistyped one', async () => {
    const { Model: _m, ...rest } = ALL;
    const service = operator({ ...rest, TenantId: INT });
    await expect(registerSearchAttributes(service, 'prod', SEARCH_ATTRIBUTES)).rejects.toThrow(SearchAttributeError);
    expect(service.added).toEqual([]);
  });

  it('says where to add them when this identity may not', async () => {
    const { Model: _m, ...rest } = ALL;
    const service = operator(rest, { add: grpcError(7, 'Request unauthorized.') });
    await expect(registerSearchAttributes(service, 'prod', SEARCH_ATTRIBUTES)).rejects.toThrow(
      'this identity may not add search attributes to namespace prod (Request unauthorized.); add them where the ' +
        'namespace is administered (on Temporal Cloud: its console or `tcld`): Model (Keyword)',
    );
  });
});
