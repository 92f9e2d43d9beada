// Registers custom search attributes on an already running server (idempotent: only missing ones are added).
import { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';

// CommonJS package: a default import works under plain Node ESM as well as under bundlers.
const { temporal } = proto;

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

export async function ensureSearchAttributes(
  address: string,
  namespace: string,
  attributes: readonly SearchAttributeSpec[],
): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    const existing = listed.customAttributes ?? {};
    const missing = attributes.filter((a) => !(a.name in existing));
    if (missing.length === 0) return;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((a) => [a.name, TYPE_CODES[a.type]])),
    });
  } finally {
    await connection.close();
  }
}
