/**
 * The 2026-07-28 Streamable HTTP request headers that mirror the body
 * (basic/transports/streamable-http, "Standard Request Headers" and
 * "Custom Headers from Tool Parameters"): `Mcp-Method`, `Mcp-Name`, and
 * `Mcp-Param-{Name}` for tool parameters annotated with `x-mcp-header`.
 */

export const X_MCP_HEADER = 'x-mcp-header';
const SENTINEL = /^=\?base64\?.*\?=$/s;
/** RFC 9110 field-name token (1*tchar). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible ASCII, inner spaces and tabs allowed, nothing at the edges. */
const PLAIN = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

/**
 * A header value as the spec's Value Encoding says: plain when it is visible
 * ASCII without edge whitespace, else `=?base64?…?=` of its UTF-8 (also when
 * empty, or when it would read as the sentinel itself).
 */
export function encodeHeaderValue(value: string): string {
  if (PLAIN.test(value) && !SENTINEL.test(value)) return value;
  return `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The inverse, for tests and servers: decodes a sentinel value, else returns it unchanged. */
export function decodeHeaderValue(value: string): string {
  const m = /^=\?base64\?(.*)\?=$/s.exec(value);
  return m ? Buffer.from(m[1]!, 'base64').toString('utf8') : value;
}

/** The body value `Mcp-Name` mirrors: `params.name` or `params.uri`, for the three methods that have one. */
export function nameHeaderFor(method: string, params: Record<string, unknown> | undefined): string | undefined {
  if (method === 'tools/call' || method === 'prompts/get') return typeof params?.name === 'string' ? params.name : undefined;
  if (method === 'resources/read') return typeof params?.uri === 'string' ? params.uri : undefined;
  return undefined;
}

/** One `Mcp-Param-{header}` mirrored from the argument at `path` (a chain of `properties` keys). */
export interface HeaderParam {
  header: string;
  path: string[];
}

export type HeaderParamsResult = { ok: true; params: HeaderParam[] } | { ok: false; reason: string };

const PRIMITIVE = new Set(['string', 'integer', 'boolean']);
/** Keywords under which an annotation is not statically reachable. */
const UNREACHABLE = [
  'items',
  'prefixItems',
  'additionalProperties',
  'patternProperties',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$ref',
  '$defs',
  'definitions',
  'dependentSchemas',
  'contains',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
];

function typeOf(schema: Record<string, unknown>): string | undefined {
  const t = schema.type;
  if (typeof t === 'string') return t;
  // ["string", "null"]: one primitive that may be null (null values send no header).
  if (Array.isArray(t)) {
    const non = t.filter((x) => x !== 'null');
    if (non.length === 1 && typeof non[0] === 'string') return non[0];
  }
  return undefined;
}

/**
 * Finds a tool's `x-mcp-header` annotations and checks them against the
 * spec's constraints. A tool that breaks any (an annotation that is not a
 * token, is not unique case-insensitively, is on a non-primitive or `number`
 * property, or is reachable only through anything but `properties`) is
 * invalid: HTTP clients must leave it out of the catalogue.
 */
export function headerParamsOf(inputSchema: unknown): HeaderParamsResult {
  const params: HeaderParam[] = [];
  const seen = new Set<string>();
  let problem: string | undefined;

  const visit = (node: unknown, path: string[], reachable: boolean, where: string): void => {
    if (problem || !node || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      node.forEach((n, i) => visit(n, path, false, `${where}[${i}]`));
      return;
    }
    const schema = node as Record<string, unknown>;
    if (X_MCP_HEADER in schema) {
      const h = schema[X_MCP_HEADER];
      if (!reachable || path.length === 0) {
        problem = `${X_MCP_HEADER} at ${where} is not reachable from the schema root through properties alone`;
        return;
      }
      if (typeof h !== 'string' || h.length === 0) {
        problem = `${X_MCP_HEADER} at ${where} must be a non-empty string`;
        return;
      }
      if (!TOKEN.test(h)) {
        problem = `${X_MCP_HEADER} ${JSON.stringify(h)} at ${where} is not an HTTP header token`;
        return;
      }
      const t = typeOf(schema);
      if (!t || !PRIMITIVE.has(t)) {
        problem =
          `${X_MCP_HEADER} ${JSON.stringify(h)} at ${where} is on a property of type ${JSON.stringify(schema.type ?? '(none)')}; ` +
          'only string, integer and boolean are allowed';
        return;
      }
      if (seen.has(h.toLowerCase())) {
        problem = `${X_MCP_HEADER} ${JSON.stringify(h)} is used twice (names are case-insensitive)`;
        return;
      }
      seen.add(h.toLowerCase());
      params.push({ header: h, path });
    }
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'properties' && v && typeof v === 'object' && !Array.isArray(v)) {
        for (const [prop, sub] of Object.entries(v as Record<string, unknown>))
          visit(sub, [...path, prop], reachable, `${where}.properties.${prop}`);
      } else if (UNREACHABLE.includes(k) || (v && typeof v === 'object')) {
        // Any other subschema position (items, anyOf, $defs, ...) is not statically reachable.
        if (k !== 'properties' && k !== 'default' && k !== 'examples' && k !== 'const' && k !== 'enum')
          visit(v, path, false, `${where}.${k}`);
      }
    }
  };
  visit(inputSchema, [], true, 'inputSchema');
  return problem ? { ok: false, reason: problem } : { ok: true, params };
}
