/**
 * Shaping for the profiles that take JSON Schema: `anthropic` and `bedrock`
 * keep the whole canonical 2020-12 vocabulary; `openai` keeps what OpenAI's
 * function calling documents (oneOf read as anyOf, allOf merged, the rest of
 * the conditions dropped); `openai-strict` adds Structured Outputs' rules: every
 * property required (an optional one made nullable, its null dropped again by
 * restoreArguments), `additionalProperties: false` everywhere, a `type` on
 * every node, and no free-form objects: those (an array of them, a cut
 * subtree) are said as JSON text (json-text.ts).
 */
import { CUT, isNever, type Node, type TypeName } from './canonical.ts';
import { mergePlans, planNeeded, type ArgPlan, type PropPlan } from './args.ts';
import { jsonKind, jsonText } from './json-text.ts';
import { renameKeys } from './keys.ts';
import type { Limits, Rules } from './profiles.ts';
import { mergeAll } from './root.ts';
import { Notes, constraintText, cut, quote, seg, withConstraints } from './text.ts';

export interface Refusal {
  code: 'strict_unsupported' | 'required_unsupported';
  reason: string;
}

export interface ShapeCtx {
  notes: Notes;
  rules: Rules;
  limits: Limits;
  refusal?: Refusal;
}

export interface Shaped {
  s: Record<string, unknown>;
  plan?: ArgPlan;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Keywords that are conditions on other schemas; dropped (counted in the notes) where a profile lacks them. */
const CONDITIONS = new Set([
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
]);

function define(obj: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

export function refuse(ctx: ShapeCtx, code: Refusal['code'], reason: string): void {
  ctx.refusal ??= { code, reason: cut(reason, 500, '…') };
}

/** The description with the constraints appended, bounded; notes a cut. */
export function describe(node: Node, parts: string[], path: string, ctx: ShapeCtx): string | undefined {
  const text = withConstraints(node.description, parts, ctx.limits.maxDescription);
  const full = withConstraints(node.description, parts, Infinity);
  if (text !== undefined && full !== undefined && full.length > text.length) {
    ctx.notes.count('description_cut', `descriptions cut to ${ctx.limits.maxDescription} characters`);
  }
  return text;
}

/** Types inferred from keywords when a node names none (strict mode needs one on every node). */
export function inferTypes(node: Node): TypeName[] | undefined {
  const values = Array.isArray(node.enum) ? node.enum : node.const !== undefined ? [node.const] : undefined;
  if (values?.length) {
    const typeOf = (v: unknown): TypeName =>
      v === null
        ? 'null'
        : Array.isArray(v)
          ? 'array'
          : typeof v === 'number'
            ? Number.isInteger(v)
              ? 'integer'
              : 'number'
            : (typeof v as TypeName);
    const t = new Set<TypeName>(values.map(typeOf));
    if (t.has('integer') && t.has('number')) t.delete('integer');
    return [...t].filter((x) => x !== ('undefined' as TypeName));
  }
  if (isObj(node.properties) || node.additionalProperties !== undefined || node.required) return ['object'];
  if (node.items !== undefined || node.prefixItems !== undefined) return ['array'];
  if (node.pattern !== undefined || node.minLength !== undefined || node.maxLength !== undefined || node.format !== undefined)
    return ['string'];
  if (node.minimum !== undefined || node.maximum !== undefined || node.multipleOf !== undefined) return ['number'];
  return undefined;
}

/** Shapes `node` for a rich profile. */
export function shapeRich(input: Node, path: string, ctx: ShapeCtx, root = false): Shaped {
  const { rules } = ctx;
  if (input[CUT]) {
    const t = input.type as TypeName[] | undefined;
    const shown = [`structure not shown: ${input[CUT]}`];
    const prim = t?.filter((x) => x !== 'null');
    const one = prim?.length === 1 && prim[0] !== 'object' && prim[0] !== 'array' ? prim[0] : undefined;
    if (rules.strict && !one && !root) return jsonText(input, jsonKind(t), shown, path, ctx, !!t?.includes('null'));
    if (rules.strict && root)
      refuse(ctx, 'strict_unsupported', `${path || '/'} was cut (${input[CUT]}); strict mode cannot say "any value"`);
    if (rules.strict && one && !root) {
      const d = describe(input, shown, path, ctx);
      return { s: { type: t!.length > 1 ? [one, 'null'] : one, ...(d ? { description: d } : {}) } };
    }
    const s: Record<string, unknown> = {};
    if (t?.length === 1 && t[0] === 'object') s.type = 'object';
    const d = describe(input, shown, path, ctx);
    if (d) s.description = d;
    return { s };
  }
  let node: Node = input;
  for (let round = 0; round < 4 && !rules.keep.has('allOf') && Array.isArray(node.allOf); round++) {
    const { allOf, ...rest } = node;
    node = mergeAll([rest, ...(allOf as Node[])]);
    ctx.notes.add('all_of_merged', `${path}/allOf`, `${(allOf as Node[]).length} allOf member(s) merged`);
  }
  if (!rules.keep.has('oneOf') && Array.isArray(node.oneOf)) {
    const { oneOf, ...rest } = node;
    node = rest.anyOf ? rest : { ...rest, anyOf: oneOf };
    ctx.notes.add('union_merged', `${path}/oneOf`, rest.anyOf ? 'oneOf dropped beside anyOf' : 'oneOf read as anyOf');
  }
  const parts: string[] = [];
  const s: Record<string, unknown> = {};
  let plan: ArgPlan | undefined;
  let types = node.type as TypeName[] | undefined;
  if (rules.strict && !types && !Array.isArray(node.anyOf)) {
    types = inferTypes(node) ?? ['string'];
    if (!inferTypes(node)) ctx.notes.add('type_assumed', path, 'no type given; "string" assumed (strict mode needs a type)');
  }
  if (types) s.type = types.length === 1 ? types[0] : [...types];
  const declared = isObj(node.properties) && Object.keys(node.properties).length > 0;
  if (rules.strict && !root && !declared && jsonKind(types) === 'object') {
    // Strict mode cannot say "any object" (every object closed, every property listed): JSON text says it.
    return jsonText(node, 'object', parts, path, ctx, types!.includes('null'));
  }

  for (const k of Object.keys(node)) {
    const v = node[k];
    if (k === 'type' || k === 'description') continue;
    if (!rules.keep.has(k)) {
      if (CONDITIONS.has(k) || k === 'allOf' || k === 'oneOf' || k === 'prefixItems' || k === 'dependentRequired') ctx.notes.dropped(k);
      else parts.push(constraintText(k, v));
      continue;
    }
    if (k === 'title') {
      if (ctx.limits.maxDescription > 0) s.title = cut(v as string, ctx.limits.maxDescription);
    } else if (k === 'required' || k === 'dependentRequired') s[k] = v;
    else if (k === 'format' && rules.formats && !types?.some((t) => rules.formats![t]?.has(v as string))) parts.push(constraintText(k, v));
    else if (k === 'enum' && (v as unknown[]).length > ctx.limits.maxEnum) {
      ctx.notes.add(
        'enum_dropped',
        `${path}/enum`,
        `${(v as unknown[]).length} values are more than ${ctx.limits.maxEnum}; written into the description`,
      );
      parts.push(constraintText('enum', v));
      if (!s.type) {
        const t = inferTypes({ enum: v });
        if (t?.length) s.type = t.length === 1 ? t[0] : t;
      }
    } else if (k === 'properties') continue;
    else if (
      k === 'items' ||
      (isObj(v) && (k === 'additionalProperties' || (CONDITIONS.has(k) && k !== 'patternProperties' && k !== 'dependentSchemas')))
    ) {
      const r = shapeRich(v as Node, path + seg(k), ctx);
      s[k] = r.s;
      if (k === 'items' && r.plan) plan = { ...plan, items: r.plan };
    } else if (k === 'anyOf' || k === 'oneOf' || k === 'allOf' || k === 'prefixItems') {
      const shaped = (v as Node[]).map((m, i) => shapeRich(m, `${path}${seg(k)}/${i}`, ctx));
      s[k] = shaped.map((r) => r.s);
      if (k !== 'prefixItems') for (const r of shaped) plan = mergePlans(plan, r.plan);
      if (shaped.some((r) => r.plan?.json) && shaped.some((r) => !r.plan?.json && mayBeString(r.s))) {
        // A string could then be the JSON text or the string variant's value: which one the model meant cannot be told.
        refuse(ctx, 'strict_unsupported', `${path || '/'} is a union of a free-form object and a string; strict mode cannot say it`);
      }
    } else if (k === 'patternProperties' || k === 'dependentSchemas') {
      const m: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries(v as Record<string, Node>))
        define(m, name, shapeRich(sub, `${path}${seg(k)}${seg(name)}`, ctx).s);
      s[k] = m;
    } else s[k] = v;
  }
  if (rules.strict && !root && plan?.items?.json && jsonKind(types) === 'array') {
    // Items said as JSON text (an array of free-form objects, arrays of arrays of them): the whole array is, once.
    return jsonText(node, 'array', parts, path, ctx, types!.includes('null'));
  }
  if (isObj(node.properties) || (rules.strict && types?.includes('object'))) plan = objectPart(node, s, path, ctx, root, plan);
  if (types?.includes('array') && s.items === undefined && s.prefixItems === undefined) {
    s.items = rules.strict ? { type: 'string' } : {};
    if (node.prefixItems) parts.push(`a tuple of ${(node.prefixItems as unknown[]).length} items`);
    ctx.notes.add(
      'items_assumed',
      `${path}/items`,
      rules.strict ? 'items not given; strings assumed' : 'items not given; any item accepted',
    );
  }
  const d = describe(node, parts, path, ctx);
  if (d) s.description = d;
  return { s, plan };
}

/** The properties of an object node: renamed where the profile's key rule says, strict mode's required/nullable rule applied. */
function objectPart(
  node: Node,
  s: Record<string, unknown>,
  path: string,
  ctx: ShapeCtx,
  root: boolean,
  plan: ArgPlan | undefined,
): ArgPlan | undefined {
  const { rules } = ctx;
  const props = isObj(node.properties) ? (node.properties as Record<string, Node>) : {};
  const names = Object.keys(props);
  const renamed = rules.keyRule ? renameKeys(names, rules.keyRule) : new Map(names.map((n) => [n, n]));
  const required = new Set((node.required as string[] | undefined) ?? []);
  const kept = names.filter((n) => rules.keep.has('not') || !isNever(props[n]));
  const out: Record<string, unknown> = {};
  const propPlans: Record<string, PropPlan> = {};
  if (rules.strict && !names.length && !root) {
    refuse(ctx, 'strict_unsupported', `${path || '/'} is an object with no declared properties; strict mode cannot say "any object"`);
  }
  for (const n of names) {
    const name = renamed.get(n)!;
    if (!rules.keep.has('not') && isNever(props[n])) {
      // `false`: the property must not be given. Without `not`, leaving it out says the most.
      ctx.notes.add('property_dropped', `${path}/properties${seg(n)}`, 'a property that must not be given (schema `false`) left out');
      continue;
    }
    const r = shapeRich(props[n], `${path}/properties${seg(n)}`, ctx);
    const p: PropPlan = {};
    if (name !== n) {
      p.from = n;
      ctx.notes.add('property_renamed', `${path}/properties${seg(n)}`, `renamed to ${quote(name)} (the provider's property-name rule)`);
    }
    if (rules.strict && !required.has(n)) {
      makeNullable(r.s);
      p.dropNull = true;
    }
    if (planNeeded(r.plan)) p.plan = r.plan;
    if (p.from !== undefined || p.dropNull || p.plan) define(propPlans, name, p);
    define(out, name, r.s);
  }
  if (names.length || rules.strict) s.properties = out;
  if (rules.strict) {
    if (kept.some((n) => !required.has(n)))
      ctx.notes.add('made_nullable', path, 'optional properties made required and nullable (strict mode)');
    s.required = kept.map((n) => renamed.get(n)!);
    if (node.additionalProperties !== undefined && node.additionalProperties !== false) {
      ctx.notes.add('map_dropped', `${path}/additionalProperties`, 'extra properties are not allowed in strict mode');
    }
    s.additionalProperties = false;
  } else if (Array.isArray(node.required)) {
    s.required = [
      ...new Set((node.required as string[]).filter((n) => kept.includes(n) || !Object.hasOwn(props, n)).map((n) => renamed.get(n) ?? n)),
    ];
  }
  if (isObj(s.dependentRequired)) {
    const dr: Record<string, unknown> = {};
    for (const [k, list] of Object.entries(s.dependentRequired)) {
      define(dr, renamed.get(k) ?? k, [...new Set((list as string[]).map((n) => renamed.get(n) ?? n))]);
    }
    s.dependentRequired = dr;
  }
  if (isObj(s.dependentSchemas)) {
    const ds: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(s.dependentSchemas)) define(ds, renamed.get(k) ?? k, v);
    s.dependentSchemas = ds;
  }
  if (!Object.keys(propPlans).length) return plan;
  return { ...plan, props: propPlans };
}

/** Whether a shaped node may take a string (a `type` that includes it, or none). */
function mayBeString(s: Record<string, unknown>): boolean {
  if (s.type === undefined) return !Array.isArray(s.anyOf) || s.anyOf.some((m) => isObj(m) && mayBeString(m));
  return s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string'));
}

/** Lets a shaped strict node also be null: a type array with "null" (and null in its enum), or a null member of its anyOf. */
function makeNullable(s: Record<string, unknown>): void {
  if (Array.isArray(s.anyOf) && s.type === undefined) {
    if (!s.anyOf.some((m) => isObj(m) && m.type === 'null')) s.anyOf = [...s.anyOf, { type: 'null' }];
    return;
  }
  const t = s.type === undefined ? ['string'] : Array.isArray(s.type) ? s.type : [s.type];
  if (!t.includes('null')) s.type = [...t, 'null'];
  if (Array.isArray(s.enum) && !s.enum.includes(null)) s.enum = [...s.enum, null];
  if (s.const !== undefined && s.const !== null) {
    s.enum = [s.const, null];
    delete s.const;
  }
}
