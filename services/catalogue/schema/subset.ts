/**
 * Shaping for Gemini's function-declaration Schema (a select subset of the
 * OpenAPI 3.0 Schema object) and for `portable`, the same subset without
 * `nullable` so that OpenAI, Anthropic and Bedrock take it too. One `type`
 * per node (type arrays and unions collapsed: null becomes `nullable`, objects
 * merged, otherwise the first alternative kept and the others named in the
 * description), `enum` only of strings on strings (`const` becomes a one-value
 * enum), a short format list, `items` on every array, and no free-form
 * objects: Gemini rejects an OBJECT without properties, so such a value (or
 * an array of them, or a cut subtree) is said as JSON text (json-text.ts).
 */
import { CUT, isNever, type Node, type TypeName } from './canonical.ts';
import { planNeeded, type ArgPlan, type PropPlan } from './args.ts';
import { jsonKind, jsonText } from './json-text.ts';
import { renameKeys } from './keys.ts';
import { describe, inferTypes, refuse, type ShapeCtx, type Shaped } from './rich.ts';
import { mergeAll, mergeAny, objectish } from './root.ts';
import { constraintText, quote, seg } from './text.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const PRIMITIVE = new Set<TypeName>(['string', 'number', 'integer', 'boolean']);
/** Keywords that are conditions on other schemas: dropped (counted in the notes), not described. */
const SCHEMA_KEYWORDS = new Set([
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'dependentSchemas',
  'unevaluatedProperties',
  'unevaluatedItems',
  'patternProperties',
  'additionalProperties',
  'prefixItems',
  'allOf',
  'anyOf',
  'oneOf',
]);

function define(obj: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** A union's variants as one node: null → nullable, strings merged, objects merged, else the first one. */
function collapse(node: Node, path: string, ctx: ShapeCtx, parts: string[]): Node {
  const { anyOf, oneOf, ...rest } = node;
  const variants = (Array.isArray(anyOf) ? anyOf : oneOf) as Node[];
  if (Array.isArray(anyOf) && Array.isArray(oneOf)) ctx.notes.dropped('oneOf');
  const isNull = (v: Node): boolean => Array.isArray(v.type) && v.type.length === 1 && v.type[0] === 'null';
  const others = variants.filter((v) => !isNull(v));
  const nullable = others.length < variants.length;
  let chosen: Node;
  if (!others.length) chosen = { type: ['null'] };
  else if (others.length === 1) chosen = others[0];
  else if (others.every((v) => stringish(v))) {
    const enums = others.every((v) => Array.isArray(v.enum) || typeof v.const === 'string');
    chosen = {
      type: ['string'],
      ...(enums ? { enum: [...new Set(others.flatMap((v) => (Array.isArray(v.enum) ? v.enum : [v.const])))] } : {}),
    };
    ctx.notes.add('union_merged', path, `${others.length} string variants merged`);
  } else if (others.every((v) => objectish(v) && isObj(v.properties))) {
    chosen = mergeAny(others);
    ctx.notes.add('union_merged', path, `${others.length} object variants merged into one object`);
  } else {
    chosen = others[0];
    const alt = others.slice(1).map((v) => (Array.isArray(v.type) ? v.type.join('/') : 'other'));
    parts.push(`also accepts: ${alt.join(', ')}`);
    ctx.notes.add(
      'union_collapsed',
      path,
      `a union of ${others.length} alternatives; the first is kept, the others are named in the description`,
    );
  }
  const merged = mergeAll([rest, chosen]);
  if (nullable) merged.type = [...((merged.type as TypeName[] | undefined) ?? inferTypes(merged) ?? ['string']), 'null'];
  return merged;
}

function stringish(v: Node): boolean {
  const t = v.type as TypeName[] | undefined;
  if (t && !(t.length === 1 && t[0] === 'string')) return false;
  if (Array.isArray(v.enum)) return v.enum.every((x) => typeof x === 'string');
  if (v.const !== undefined) return typeof v.const === 'string';
  return !!t;
}

/**
 * Shapes `input` for a subset profile, or returns undefined when the value
 * cannot be said in the subset (the parent then drops or refuses it).
 */
export function shapeSubset(input: Node, path: string, ctx: ShapeCtx, root = false): Shaped | undefined {
  const hint = input.type as TypeName[] | undefined;
  if (input[CUT]) {
    const prim = hint?.filter((t) => t !== 'null');
    if (root) return { s: { type: 'object' } };
    const shown = [`structure not shown: ${input[CUT]}`];
    if (!prim || prim.length !== 1 || !PRIMITIVE.has(prim[0]))
      return jsonText(input, jsonKind(hint), shown, path, ctx, !!hint?.includes('null'));
    const d = describe(input, shown, path, ctx);
    return { s: { type: prim[0], ...(d ? { description: d } : {}) } };
  }
  if (isNever(input)) return undefined;
  const parts: string[] = [];
  let node: Node = input;
  for (let round = 0; round < 4 && (Array.isArray(node.allOf) || Array.isArray(node.anyOf) || Array.isArray(node.oneOf)); round++) {
    if (Array.isArray(node.allOf)) {
      const { allOf, ...rest } = node;
      node = mergeAll([rest, ...(allOf as Node[])]);
      ctx.notes.add('all_of_merged', `${path}/allOf`, `${(allOf as Node[]).length} allOf member(s) merged`);
    } else node = collapse(node, path, ctx, parts);
  }
  let types = (node.type as TypeName[] | undefined) ?? inferTypes(node);
  if (!types) {
    types = ['string'];
    ctx.notes.add('type_assumed', path, 'any value accepted here; "string" assumed (the subset needs a type)');
  }
  const nullable = types.includes('null');
  let real = types.filter((t) => t !== 'null');
  if (real.includes('integer') && real.includes('number')) real = real.filter((t) => t !== 'integer');
  if (!real.length) return undefined;
  if (root) real = ['object'];
  const type = real[0];
  if (real.length > 1) {
    parts.push(`also accepts: ${real.slice(1).join(', ')}`);
    ctx.notes.add('type_collapsed', `${path}/type`, `${quote(real)} narrowed to ${quote(type)}`);
  }
  const s: Record<string, unknown> = { type };
  if (nullable) {
    if (ctx.rules.nullable) s.nullable = true;
    else ctx.notes.add('null_dropped', path, 'null is not offered (not portable)');
  }
  let plan: ArgPlan | undefined;
  // Said only when the object keeps its declared properties: a free-form one goes whole, as JSON text.
  const maps: string[] = [];
  for (const k of Object.keys(node)) {
    const v = node[k];
    if (k === 'type' || k === 'description' || k === 'properties' || k === 'required' || k === 'items') continue;
    if (k === 'enum' || k === 'const') {
      const values = (k === 'const' ? [v] : (v as unknown[])).filter((x) => x !== null);
      if (
        type === 'string' &&
        values.every((x) => typeof x === 'string') &&
        values.length &&
        values.length <= ctx.limits.maxEnum &&
        s.enum === undefined
      ) {
        s.enum = values;
        if (k === 'const') ctx.notes.add('const_to_enum', `${path}/const`, 'const written as a one-value enum');
      } else {
        if (values.length > ctx.limits.maxEnum)
          ctx.notes.add('enum_dropped', `${path}/enum`, `${values.length} values are more than ${ctx.limits.maxEnum}`);
        parts.push(constraintText(k, v));
      }
    } else if (k === 'format') {
      if (ctx.rules.formats?.[type]?.has(v as string)) s.format = v;
      else parts.push(constraintText(k, v));
    } else if ((k === 'minItems' || k === 'maxItems') && type === 'array') s[k] = v;
    else if (SCHEMA_KEYWORDS.has(k)) {
      if (k === 'additionalProperties' && v === false) continue;
      if (k === 'additionalProperties' || k === 'patternProperties') maps.push(k);
      else ctx.notes.dropped(k);
    } else if (k !== 'title' && k !== 'deprecated' && k !== 'readOnly' && k !== 'writeOnly') parts.push(constraintText(k, v));
  }
  // Several types narrowed to the first: JSON text of such a value may hold any of them (jsonKind).
  if (type === 'array') {
    let items: Shaped | undefined;
    if (node.items !== undefined) items = shapeSubset(node.items as Node, `${path}/items`, ctx);
    else if (Array.isArray(node.prefixItems)) {
      parts.push(`a tuple of ${node.prefixItems.length} items`);
      items = shapeSubset(node.prefixItems[0] as Node, `${path}/prefixItems/0`, ctx);
    } else {
      items = { s: { type: 'string' } };
      ctx.notes.add('items_assumed', `${path}/items`, 'items not given; strings assumed');
    }
    // Items said as JSON text (an array of free-form objects, arrays of arrays of them): the whole array is, once.
    if (!items || items.plan?.json) return jsonText(node, jsonKind(real), parts, path, ctx, nullable);
    s.items = items.s;
    if (planNeeded(items.plan)) plan = { items: items.plan };
  }
  if (type === 'object') {
    const r = objectPart(node, s, path, ctx, root);
    if (!r) return jsonText(node, jsonKind(real), parts, path, ctx, nullable);
    plan = r.plan;
    for (const k of maps) ctx.notes.add('map_dropped', path + seg(k), 'extra properties cannot be described in this profile');
  }
  const d = describe(node, parts, path, ctx);
  if (d) s.description = d;
  return { s, plan };
}

function objectPart(node: Node, s: Record<string, unknown>, path: string, ctx: ShapeCtx, root: boolean): { plan?: ArgPlan } | undefined {
  const props = isObj(node.properties) ? (node.properties as Record<string, Node>) : {};
  const names = Object.keys(props);
  const renamed = renameKeys(names, ctx.rules.keyRule!);
  const required = new Set((node.required as string[] | undefined) ?? []);
  const out: Record<string, unknown> = {};
  const plans: Record<string, PropPlan> = {};
  const req: string[] = [];
  for (const n of names) {
    const p = `${path}/properties${seg(n)}`;
    const r = shapeSubset(props[n], p, ctx);
    if (!r) {
      // Left: a value that can only be null, or none at all (`false`); free-form objects came back as JSON text.
      const why = `required property ${quote(n)} at ${path || '/'} cannot be described in this profile (it accepts no value but null)`;
      if (required.has(n)) refuse(ctx, 'required_unsupported', why);
      else ctx.notes.add('property_dropped', p, 'optional property left out: it accepts no value but null');
      continue;
    }
    const name = renamed.get(n)!;
    const pp: PropPlan = {};
    if (name !== n) {
      pp.from = n;
      ctx.notes.add('property_renamed', p, `renamed to ${quote(name)} (the provider's property-name rule)`);
    }
    if (planNeeded(r.plan)) pp.plan = r.plan;
    if (pp.from !== undefined || pp.plan) define(plans, name, pp);
    define(out, name, r.s);
    if (required.has(n)) req.push(name);
  }
  if (!Object.keys(out).length && !root) return undefined;
  if (Object.keys(out).length || root) s.properties = out;
  if (req.length) s.required = req;
  return Object.keys(plans).length ? { plan: { props: plans } } : {};
}
