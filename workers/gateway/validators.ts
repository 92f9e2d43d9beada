// Schema validation of the gateway (issue #9 §7): request bodies are validated WITHOUT type coercion — a wrong type
// is a 400 naming the field, never rewritten data (`["a"]` is not the string "a", 12345 is not text) — while
// querystrings and path parameters, which are text on the wire, are coerced to the types their schemas declare.
// The format `dc-text` is the store's rule for metadata text (contracts/storableText.ts): no NUL, no unpaired
// surrogate.
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { isStorableText } from '../../contracts/storableText.js';

function ajv(coerceTypes: false | 'array'): Ajv {
  const instance = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  // ajv-formats is CommonJS: under NodeNext its default export is the module object.
  (formats as unknown as { default: (a: Ajv) => void }).default(instance);
  instance.addFormat('dc-text', { type: 'string', validate: isStorableText });
  return instance;
}

/** Installs the two compilers; call before any route is registered. */
export function installValidators(app: FastifyInstance): void {
  const body = ajv(false);
  const text = ajv('array');
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? body : text).compile(schema as FastifySchema & object),
  );
}
