/**
 * The canonical form: the dereferenced graph (possibly cyclic, possibly shared)
 * walked into a finite JSON Schema 2020-12 tree that every profile shapes from.
 * Here cycles, depth and the node budget are cut (a cut node keeps its type and
 * description and is marked with CUT), boolean schemas become objects, drafts'
 * forms are converted (tuple `items` → `prefixItems`, boolean
 * `exclusiveMinimum`, `dependencies`, OpenAPI `nullable`), malformed keyword
 * values and unknown keywords are dropped, and objects keep at most
 * BOUNDS.maxProperties properties (required ones first). `type` is always an
 * array here; the shapers turn it into what the profile takes.
 */
import { BOUNDS, type Limits } from './profiles.ts';
import { CUT_KEY } from './refs.ts';
import { Notes, cut, quote, seg } from './text.ts';

/** Marks a cut node; the value is the reason. */
export const CUT = Symbol('albedo.schema.cut');

export type Node = { [k: string]: unknown; [CUT]?: string };

export const TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'] as const;
export type TypeName = (typeof TYPES)[number];

/** Keywords that hold one subschema, a list of them, or a map of them. */
const ONE = ['not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems'];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', 'dependentSchemas'];
const COUNTS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'];
const NUMBERS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const STRINGS = ['description', 'title', 'format', 'contentMediaType', 'contentEncoding'];
const FLAGS = ['deprecated', 'readOnly', 'writeOnly', 'uniqueItems'];
/** Dropped without a note: meaningless once references are inlined. */
const SILENT = new Set([
  '$schema',
  '$id',
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$comment',
  '$defs',
  'definitions',
  '$vocabulary',
  'nullable',
]);

export interface Ctx {
  notes: Notes;
  limits: Limits;
  nodes: number;
  totalProps: number;
  /** Set when a required property had to be cut: the schema cannot be made acceptable. */
  refusal?: { code: 'too_many_properties'; reason: string };
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;
/** JSON text of a value, or undefined when it has none (a cycle made by a `$ref` inside data, say). */
export function safeJson(v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch {
    return undefined;
  }
}
const jsonBytes = (v: unknown): number => {
  const s = safeJson(v);
  return s === undefined ? Infinity : Buffer.byteLength(s, 'utf8');
};

/** The types a raw `type` names (invalid names dropped), or undefined. */
function typesOf(raw: unknown, path: string, ctx: Ctx): TypeName[] | undefined {
  const list = typeof raw === 'string' ? [raw] : Array.isArray(raw) ? raw : raw === undefined ? undefined : [];
  if (list === undefined) return undefined;
  const out = [...new Set(list.filter((t): t is TypeName => (TYPES as readonly unknown[]).includes(t)))];
  if (out.length !== list.length) ctx.notes.add('invalid_keyword', path, `type ${quote(raw)} has unknown or repeated names`);
  return out.length ? out : undefined;
}

/** A type hint for a cut node, from its raw keywords. */
function hintOf(raw: Record<string, unknown>): TypeName[] | undefined {
  const t = raw.type;
  const named = (typeof t === 'string' ? [t] : Array.isArray(t) ? t : []).filter((x): x is TypeName =>
    (TYPES as readonly unknown[]).includes(x),
  );
  if (named.length) return [...new Set(named)];
  if (isObj(raw.properties)) return ['object'];
  if (raw.items !== undefined || raw.prefixItems !== undefined) return ['array'];
  return undefined;
}

function cutNode(raw: unknown, reason: string): Node {
  const out: Node = {};
  if (isObj(raw)) {
    const hint = hintOf(raw);
    if (hint) out.type = hint;
    if (typeof raw.description === 'string') out.description = raw.description;
    if (typeof raw.title === 'string') out.title = raw.title;
  }
  out[CUT] = reason;
  return out;
}

/** Whether a raw node has subschemas (so it cannot sit at the depth bound). Arrays always need `items`. */
function hasChildren(raw: Record<string, unknown>): boolean {
  if (hintOf(raw)?.includes('array')) return true;
  for (const k of [...ONE, ...LIST, ...MAP, 'items', 'additionalProperties', 'additionalItems', 'dependencies']) {
    const v = raw[k];
    if (v === undefined || typeof v === 'boolean') continue;
    if (isObj(v) && MAP.includes(k) && Object.keys(v).length === 0) continue;
    return true;
  }
  return false;
}

/**
 * The canonical tree of `raw` at `path`. `ancestors` holds every object on the
 * way down (schema nodes and keyword maps), so a cycle through a merged
 * `$ref` sibling object is found too.
 */
export function canon(raw: unknown, path: string, depth: number, ancestors: Set<object>, ctx: Ctx): Node {
  if (raw === true || raw === undefined) return {};
  if (raw === false) {
    // `{ not: {} }` has a subschema of its own: at the depth bound it is cut like any other subtree.
    if (depth < ctx.limits.maxDepth) return { not: {} };
    ctx.notes.add('depth_cut', path, `nested deeper than ${ctx.limits.maxDepth} levels`);
    return cutNode(undefined, 'nested too deep');
  }
  if (!isObj(raw)) {
    ctx.notes.add('invalid_schema', path, `${quote(raw)} is not a schema; any value is accepted here`);
    return {};
  }
  if (Object.hasOwn(raw, CUT_KEY)) return cutNode(raw, String(raw[CUT_KEY]));
  if (ancestors.has(raw)) {
    ctx.notes.add('cycle_cut', path, 'recursive reference cut here');
    return cutNode(raw, 'recursive structure cut');
  }
  if (typeof raw.$ref === 'string') {
    ctx.notes.add('ref_unresolved', path, `${quote(raw.$ref)} left uninlined; any value is accepted here`);
    return cutNode(raw, `reference ${quote(raw.$ref)} not inlined`);
  }
  if (++ctx.nodes > BOUNDS.maxNodes) {
    if (ctx.nodes === BOUNDS.maxNodes + 1) ctx.notes.add('budget_cut', path, `more than ${BOUNDS.maxNodes} schema nodes; the rest is cut`);
    return cutNode(raw, 'schema too large');
  }
  if (depth >= ctx.limits.maxDepth && hasChildren(raw)) {
    ctx.notes.add('depth_cut', path, `nested deeper than ${ctx.limits.maxDepth} levels`);
    return cutNode(raw, 'nested too deep');
  }
  ancestors.add(raw);
  try {
    return keywords(raw, path, depth, ancestors, ctx);
  } finally {
    ancestors.delete(raw);
  }
}

function keywords(raw: Record<string, unknown>, path: string, depth: number, ancestors: Set<object>, ctx: Ctx): Node {
  const out: Node = {};
  const bad = (k: string): void => ctx.notes.add('invalid_keyword', path + seg(k), `${quote(raw[k], 60)} is not a valid value; dropped`);
  const sub = (v: unknown, p: string): Node => canon(v, p, depth + 1, ancestors, ctx);
  const types = typesOf(raw.type, path, ctx);
  if (types) out.type = types;
  if (raw.nullable === true && types && !types.includes('null')) types.push('null');

  for (const k of Object.keys(raw)) {
    const v = raw[k];
    if (k === 'type' || SILENT.has(k)) continue;
    if (STRINGS.includes(k)) {
      if (typeof v === 'string') out[k] = v;
      else bad(k);
    } else if (FLAGS.includes(k)) {
      if (typeof v === 'boolean') out[k] = v;
      else bad(k);
    } else if (COUNTS.includes(k)) {
      if (isCount(v)) out[k] = v;
      else bad(k);
    } else if (NUMBERS.includes(k)) {
      if (typeof v === 'number') out[k] = v;
      else if (typeof v !== 'boolean') bad(k);
    } else if (k === 'multipleOf') {
      if (typeof v === 'number' && v > 0) out[k] = v;
      else bad(k);
    } else if (k === 'pattern') {
      if (validRegex(v)) out[k] = v;
      else bad(k);
    } else if (k === 'enum') {
      const values = Array.isArray(v) ? dedupe(v) : [];
      if (values.length) out.enum = values;
      else bad(k);
    } else if (k === 'const' || k === 'default') {
      if (jsonBytes(v) <= BOUNDS.maxValueBytes) out[k] = v;
      else bad(k);
    } else if (k === 'examples') {
      if (Array.isArray(v) && jsonBytes(v) <= BOUNDS.maxValueBytes) out[k] = v;
      else bad(k);
    } else if (k === 'required') {
      if (Array.isArray(v)) out.required = [...new Set(v.filter((x): x is string => typeof x === 'string'))];
      else bad(k);
    } else if (k === 'dependentRequired') {
      const m = stringLists(v);
      if (m) out[k] = m;
      else bad(k);
    } else if (ONE.includes(k) || k === 'additionalProperties')
      out[k] = typeof v === 'boolean' && k === 'additionalProperties' ? v : sub(v, path + seg(k));
    else if (LIST.includes(k)) {
      if (Array.isArray(v) && v.length) out[k] = v.map((m, i) => sub(m, `${path}${seg(k)}/${i}`));
      else bad(k);
    } else if (MAP.includes(k)) {
      const m = schemaMap(raw, k, path, sub, ctx);
      if (m) out[k] = m;
    } else if (k === 'items') {
      if (Array.isArray(v)) {
        if (v.length) out.prefixItems = v.map((m, i) => sub(m, `${path}/items/${i}`));
      } else out.items = sub(v, path + seg(k));
    } else if (k === 'additionalItems' || k === 'dependencies' || k === 'x-nullable') continue;
    else ctx.notes.dropped(k);
  }
  draftForms(raw, out, path, sub);
  boundProperties(out, path, ctx);
  return out;
}

/** Draft-04/07 and OpenAPI forms rewritten as 2020-12. */
function draftForms(raw: Record<string, unknown>, out: Node, path: string, sub: (v: unknown, p: string) => Node): void {
  for (const [ex, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (raw[ex] === true && typeof out[bound] === 'number') {
      out[ex] = out[bound];
      delete out[bound];
    }
  }
  if (Array.isArray(raw.items) && raw.additionalItems !== undefined && out.items === undefined) {
    out.items = sub(raw.additionalItems, `${path}/additionalItems`);
  }
  if (isObj(raw.dependencies)) {
    for (const [name, dep] of Object.entries(raw.dependencies)) {
      if (Array.isArray(dep)) {
        const req = (out.dependentRequired ??= {}) as Record<string, string[]>;
        if (!Object.hasOwn(req, name)) define(req, name, [...new Set(dep.filter((x): x is string => typeof x === 'string'))]);
      } else {
        const schemas = (out.dependentSchemas ??= {}) as Record<string, Node>;
        if (!Object.hasOwn(schemas, name)) define(schemas, name, sub(dep, `${path}/dependencies${seg(name)}`));
      }
    }
  }
}

/** Sets an own data property, even for the name `__proto__` (property names are server data). */
function define(obj: object, k: string, v: unknown): void {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

function schemaMap(
  raw: Record<string, unknown>,
  k: string,
  path: string,
  sub: (v: unknown, p: string) => Node,
  ctx: Ctx,
): Record<string, Node> | undefined {
  const v = raw[k];
  if (!isObj(v)) {
    ctx.notes.add('invalid_keyword', path + seg(k), `${quote(v, 60)} is not a map of schemas; dropped`);
    return undefined;
  }
  const out: Record<string, Node> = {};
  let names = Object.keys(v);
  if (k === 'patternProperties') names = names.filter((n) => validRegex(n));
  if (k === 'properties') names = pickProperties(names, raw.required, path, ctx);
  for (const n of names) define(out, n, sub(v[n], `${path}${seg(k)}${seg(n)}`));
  return out;
}

/** At most BOUNDS.maxProperties per object and BOUNDS.maxTotalProperties in all; required ones are kept first. */
function pickProperties(names: string[], required: unknown, path: string, ctx: Ctx): string[] {
  const req = new Set(Array.isArray(required) ? required.filter((x) => typeof x === 'string') : []);
  const room = Math.max(0, Math.min(BOUNDS.maxProperties, BOUNDS.maxTotalProperties - ctx.totalProps));
  if (names.length <= room) {
    ctx.totalProps += names.length;
    return names;
  }
  const keep = new Set([...names.filter((n) => req.has(n)), ...names.filter((n) => !req.has(n))].slice(0, room));
  const lostRequired = names.filter((n) => req.has(n) && !keep.has(n));
  if (lostRequired.length && !ctx.refusal) {
    ctx.refusal = {
      code: 'too_many_properties',
      reason: `more required properties than the bound of ${room} at ${cut(path || '/', 200, '…')}`,
    };
  }
  const bound = `bound ${BOUNDS.maxProperties} per object, ${BOUNDS.maxTotalProperties} in all`;
  ctx.notes.add('properties_cut', path, `${names.length - keep.size} of ${names.length} properties left out (${bound})`);
  ctx.totalProps += keep.size;
  return names.filter((n) => keep.has(n));
}

/** `required` names only properties that exist (OpenAI strict and Gemini reject others). */
function boundProperties(out: Node, path: string, ctx: Ctx): void {
  if (!Array.isArray(out.required) || !isObj(out.properties)) return;
  const props = out.properties;
  const kept = (out.required as string[]).filter((n) => Object.hasOwn(props, n));
  if (kept.length !== (out.required as string[]).length)
    ctx.notes.add('invalid_keyword', `${path}/required`, 'names of undeclared properties dropped');
  out.required = kept;
}

function stringLists(v: unknown): Record<string, string[]> | undefined {
  if (!isObj(v)) return undefined;
  const out: Record<string, string[]> = {};
  for (const [k, list] of Object.entries(v)) {
    if (!Array.isArray(list)) return undefined;
    define(out, k, [...new Set(list.filter((x): x is string => typeof x === 'string'))]);
  }
  return out;
}

/** Distinct JSON values, in order; values without JSON text are dropped. */
function dedupe(values: unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const key = safeJson(v);
    if (key === undefined || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The `false` schema (canonical `{ not: {} }`): no value is valid. */
export function isNever(n: Node): boolean {
  const keys = Object.keys(n);
  const not = n.not as Node | undefined;
  return keys.length === 1 && keys[0] === 'not' && isObj(not) && !Object.keys(not).length && !not[CUT];
}

export function validRegex(p: unknown): p is string {
  if (typeof p !== 'string' || p.length > 1_024) return false;
  try {
    new RegExp(p, 'u');
    return true;
  } catch {
    return false;
  }
}
