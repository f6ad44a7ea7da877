/**
 * The providers' documented rules for tool input schemas, written down as
 * checkers (sources in docs/research/provider-schemas.md). Deliberately
 * independent of services/catalogue/schema: a checker returns the list of
 * rules a schema breaks (`<pointer>: <rule>`), empty when it passes. Every
 * checker also applies Albedo's own bounds (checkBounds). `portable` must pass
 * OpenAI (non-strict), Anthropic, Gemini and Bedrock at once.
 *
 * The JSON Schema 2020-12 meta-schema check uses ajv, present in node_modules
 * as a dependency of @modelcontextprotocol/sdk and the conformance suite.
 */
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';

type Ajv2020Class = new (opts: Record<string, unknown>) => {
  validateSchema(s: unknown): boolean;
  errors?: Array<{ instancePath: string; message?: string }> | null;
};
const Ajv2020 = createRequire(import.meta.url)('ajv/dist/2020') as Ajv2020Class;
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

type S = Record<string, unknown>;
const isObj = (v: unknown): v is S => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Albedo's bounds (docs/architecture.md "Schemas and profiles"). */
export const LIMITS = { depth: 10, propertiesPerObject: 100, properties: 1_000, enum: 1_000, description: 1_024, bytes: 64 * 1024 };

const ONE = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'additionalItems',
];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions'];

/** Calls `fn` on every schema node (depth: root 0, each subschema one more). */
export function visit(schema: unknown, fn: (node: S, path: string, depth: number) => void, path = '', depth = 0): void {
  if (!isObj(schema)) return;
  fn(schema, path, depth);
  for (const k of ONE) if (isObj(schema[k])) visit(schema[k], fn, `${path}/${k}`, depth + 1);
  for (const k of LIST)
    if (Array.isArray(schema[k])) (schema[k] as unknown[]).forEach((m, i) => visit(m, fn, `${path}/${k}/${i}`, depth + 1));
  if (Array.isArray(schema.items)) schema.items.forEach((m, i) => visit(m, fn, `${path}/items/${i}`, depth + 1));
  for (const k of MAP)
    if (isObj(schema[k])) for (const [n, m] of Object.entries(schema[k] as S)) visit(m, fn, `${path}/${k}/${n}`, depth + 1);
}

const typesOf = (n: S): unknown[] => (typeof n.type === 'string' ? [n.type] : Array.isArray(n.type) ? n.type : []);

/** Albedo's bounds, common to every profile. */
export function checkBounds(schema: unknown): string[] {
  const v: string[] = [];
  if (!isObj(schema)) return ['/: not a JSON object'];
  let json: string;
  try {
    json = JSON.stringify(schema);
  } catch {
    return ['/: not serialisable as JSON'];
  }
  if (!isDeepStrictEqual(JSON.parse(json), schema)) v.push('/: does not survive a JSON round trip');
  if (Buffer.byteLength(json) > LIMITS.bytes) v.push(`/: ${Buffer.byteLength(json)} bytes > ${LIMITS.bytes}`);
  let total = 0;
  visit(schema, (n, p, d) => {
    if (d > LIMITS.depth) v.push(`${p}: depth ${d} > ${LIMITS.depth}`);
    for (const k of ['$ref', '$defs', 'definitions', '$dynamicRef']) if (k in n) v.push(`${p}: ${k} left in`);
    if (isObj(n.properties)) {
      const c = Object.keys(n.properties).length;
      total += c;
      if (c > LIMITS.propertiesPerObject) v.push(`${p}: ${c} properties > ${LIMITS.propertiesPerObject}`);
    }
    if (Array.isArray(n.enum) && n.enum.length > LIMITS.enum) v.push(`${p}: enum of ${n.enum.length} > ${LIMITS.enum}`);
    for (const k of ['description', 'title']) {
      if (typeof n[k] === 'string' && (n[k] as string).length > LIMITS.description) v.push(`${p}/${k}: longer than ${LIMITS.description}`);
    }
  });
  if (total > LIMITS.properties) v.push(`/: ${total} properties in all > ${LIMITS.properties}`);
  return v;
}

function metaSchema(schema: unknown): string[] {
  if (ajv.validateSchema(schema)) return [];
  return (ajv.errors ?? []).map((e) => `${e.instancePath || '/'}: JSON Schema 2020-12 meta-schema: ${e.message}`);
}

function rootRules(schema: S, banned: string[]): string[] {
  const v: string[] = [];
  if (schema.type !== 'object') v.push('/: root type must be "object"');
  for (const k of banned) if (k in schema) v.push(`/: ${k} is not allowed at the root`);
  return v;
}

/**
 * OpenAI function calling (`strict: false`): root `type: "object"` without
 * oneOf/anyOf/allOf/enum/not; a valid JSON Schema; every array has `items`.
 * With `strict`, Structured Outputs' supported subset and limits.
 */
export function checkOpenAI(schema: unknown, { strict = false } = {}): string[] {
  const v = checkBounds(schema);
  if (!isObj(schema)) return v;
  v.push(...rootRules(schema, ['oneOf', 'anyOf', 'allOf', 'enum', 'not']), ...metaSchema(schema));
  const STRICT_KEYS = new Set([
    'type',
    'description',
    'enum',
    'const',
    'properties',
    'required',
    'additionalProperties',
    'items',
    'anyOf',
    'pattern',
    'format',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'multipleOf',
    'minItems',
    'maxItems',
  ]);
  const FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
  let props = 0;
  let enums = 0;
  let chars = 0;
  visit(schema, (n, p, d) => {
    const t = typesOf(n);
    if (t.includes('array') && !isObj(n.items)) v.push(`${p}: array schema missing items`);
    if (!strict) return;
    for (const k of Object.keys(n)) if (!STRICT_KEYS.has(k)) v.push(`${p}: ${k} is not supported in strict mode`);
    if (!t.length && !Array.isArray(n.anyOf)) v.push(`${p}: strict mode needs a type`);
    if (typeof n.format === 'string' && !FORMATS.has(n.format)) v.push(`${p}: format ${n.format} is not supported in strict mode`);
    if (d > 10) v.push(`${p}: more than 10 levels of nesting`);
    if (t.includes('object')) {
      if (!isObj(n.properties)) v.push(`${p}: strict objects need properties`);
      if (n.additionalProperties !== false) v.push(`${p}: additionalProperties must be false`);
      const keys = isObj(n.properties) ? Object.keys(n.properties) : [];
      const req = Array.isArray(n.required) ? n.required : [];
      if (keys.length !== req.length || !keys.every((k) => req.includes(k))) v.push(`${p}: required must list every property`);
      props += keys.length;
      chars += keys.reduce((a, k) => a + k.length, 0);
    }
    if (Array.isArray(n.enum)) {
      enums += n.enum.length;
      const len = n.enum.reduce<number>((a, x) => a + (typeof x === 'string' ? x.length : 0), 0);
      chars += len;
      if (n.enum.length > 250 && len > 15_000) v.push(`${p}: an enum of more than 250 values over 15,000 characters`);
    }
    if (typeof n.const === 'string') chars += n.const.length;
  });
  if (strict && props > 5_000) v.push(`/: ${props} properties > 5,000`);
  if (strict && enums > 1_000) v.push(`/: ${enums} enum values > 1,000`);
  if (strict && chars > 120_000) v.push(`/: ${chars} characters of names and values > 120,000`);
  return v;
}

/**
 * Anthropic tool use: a valid JSON Schema 2020-12, root `type: "object"`, no root
 * oneOf/allOf/anyOf, property keys `^[a-zA-Z0-9_.-]{1,64}$`.
 */
export function checkAnthropic(schema: unknown): string[] {
  const v = checkBounds(schema);
  if (!isObj(schema)) return v;
  v.push(...rootRules(schema, ['oneOf', 'anyOf', 'allOf']), ...metaSchema(schema));
  visit(schema, (n, p) => {
    for (const k of isObj(n.properties) ? Object.keys(n.properties) : []) {
      if (!/^[a-zA-Z0-9_.-]{1,64}$/.test(k)) v.push(`${p}/properties: key ${JSON.stringify(k)} breaks ^[a-zA-Z0-9_.-]{1,64}$`);
    }
    if (typeof n.pattern === 'string') {
      try {
        new RegExp(n.pattern, 'u');
      } catch {
        v.push(`${p}/pattern: not a regular expression`);
      }
    }
  });
  return v;
}

/**
 * Gemini function declarations (`parameters`, a select subset of the OpenAPI
 * 3.0 Schema object): only the fields every API version has, one type per
 * node, enum only of strings on strings, documented formats, items on every
 * array, a non-empty properties map on every nested object, parameter names
 * `^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`. A root without properties is a function
 * without parameters (the caller omits `parameters`).
 */
export function checkGemini(schema: unknown): string[] {
  const v = checkBounds(schema);
  if (!isObj(schema)) return v;
  if (schema.type !== 'object') v.push('/: root type must be "object"');
  const KEYS = new Set(['type', 'format', 'description', 'nullable', 'enum', 'items', 'properties', 'required', 'minItems', 'maxItems']);
  const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);
  const FORMATS: Record<string, Set<string>> = {
    string: new Set(['enum', 'date-time']),
    number: new Set(['float', 'double']),
    integer: new Set(['int32', 'int64']),
  };
  visit(schema, (n, p, d) => {
    for (const k of Object.keys(n)) if (!KEYS.has(k)) v.push(`${p}: unknown field ${k}`);
    const t = n.type;
    if (typeof t !== 'string' || !TYPES.has(t)) {
      v.push(`${p}: type must be one of ${[...TYPES].join(', ')}`);
      return;
    }
    if ('nullable' in n && typeof n.nullable !== 'boolean') v.push(`${p}: nullable must be a boolean`);
    if ('description' in n && typeof n.description !== 'string') v.push(`${p}: description must be a string`);
    const strings = Array.isArray(n.enum) && n.enum.length > 0 && n.enum.every((x) => typeof x === 'string');
    if ('enum' in n && (t !== 'string' || !strings)) v.push(`${p}: enum only allowed for STRING type, as strings`);
    if ('format' in n && !FORMATS[t]?.has(n.format as string)) v.push(`${p}: format ${String(n.format)} is not supported for ${t}`);
    if ((t === 'array') !== isObj(n.items)) v.push(`${p}: items ${t === 'array' ? 'missing' : 'only allowed for ARRAY'}`);
    for (const k of ['minItems', 'maxItems']) {
      if (k in n && (t !== 'array' || !Number.isInteger(n[k]) || (n[k] as number) < 0)) v.push(`${p}: ${k} must be a count on an ARRAY`);
    }
    if ('properties' in n || 'required' in n) if (t !== 'object') v.push(`${p}: properties/required only allowed for OBJECT type`);
    if (t === 'object') {
      const keys = isObj(n.properties) ? Object.keys(n.properties) : [];
      if (d > 0 && !keys.length) v.push(`${p}: properties should be non-empty for OBJECT type`);
      for (const k of keys)
        if (!/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/.test(k)) v.push(`${p}/properties: parameter name ${JSON.stringify(k)} is not allowed`);
      const req = n.required;
      const fine = Array.isArray(req) && req.every((r) => typeof r === 'string' && keys.includes(r)) && new Set(req).size === req.length;
      if ('required' in n && !fine) v.push(`${p}: required must name declared properties, once each`);
    }
  });
  return v;
}

/**
 * Bedrock Converse (toolSpec.inputSchema.json): root type must be "object";
 * Amazon Nova takes only type, properties and required at the top level; Claude
 * on Bedrock applies Anthropic's rules.
 */
export function checkBedrock(schema: unknown): string[] {
  const v = checkAnthropic(schema);
  if (!isObj(schema)) return v;
  for (const k of Object.keys(schema))
    if (!['type', 'properties', 'required'].includes(k)) v.push(`/: ${k} is not supported at the top level (Nova)`);
  return [...new Set(v)];
}

/** Accepted by OpenAI (function calling), Anthropic, Gemini and Bedrock at once. */
export function checkPortable(schema: unknown): string[] {
  return [...new Set([...checkOpenAI(schema), ...checkAnthropic(schema), ...checkGemini(schema), ...checkBedrock(schema)])];
}

/** One checker per profile. */
export const CHECKERS: Record<string, (schema: unknown) => string[]> = {
  portable: checkPortable,
  openai: (s) => checkOpenAI(s),
  'openai-strict': (s) => checkOpenAI(s, { strict: true }),
  anthropic: checkAnthropic,
  gemini: checkGemini,
  bedrock: checkBedrock,
};
