/**
 * The root rule every provider shares: the root is `type: object` with no
 * combinator (Anthropic: "input_schema does not support oneOf, allOf, or anyOf
 * at the top level"; OpenAI: no anyOf at the root; Bedrock: root type must be
 * object). Root `allOf` members are merged in; root `anyOf`/`oneOf` variants of
 * objects are merged (their properties united, a property required only when
 * every variant requires it); what cannot be merged is written into the root
 * description and the notes. Also the merge helpers the shapers reuse.
 */
import { CUT, type Node, type TypeName } from './canonical.ts';
import { Notes, constraintText, quote } from './text.ts';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const types = (n: Node): TypeName[] | undefined => n.type as TypeName[] | undefined;

function define(obj: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** Whether `n` can only describe objects (its types, if any, are object). */
export function objectish(n: Node): boolean {
  const t = types(n);
  if (t) return t.every((x) => x === 'object' || x === 'null') && t.includes('object');
  return n.items === undefined && n.prefixItems === undefined && n.enum === undefined && n.const === undefined;
}

/**
 * `allOf` semantics, approximated: properties united (the first schema of a
 * name wins), required united, types intersected, other keywords first wins.
 */
export function mergeAll(members: Node[]): Node {
  const out: Node = {};
  for (const m of members) {
    for (const k of Object.keys(m)) {
      const v = m[k];
      if (k === 'properties' && isObj(v)) {
        const props = (out.properties ??= {}) as Record<string, unknown>;
        for (const [name, s] of Object.entries(v)) if (!Object.hasOwn(props, name)) define(props, name, s);
      } else if (k === 'required' && Array.isArray(v)) {
        out.required = [...new Set([...((out.required as string[]) ?? []), ...(v as string[])])];
      } else if (k === 'type' && Array.isArray(v)) {
        const cur = out.type as TypeName[] | undefined;
        const both = cur?.filter((t) => (v as TypeName[]).includes(t) || (t === 'integer' && v.includes('number')));
        out.type = !cur ? [...v] : both?.length ? both : cur;
      } else if (k === 'description' && typeof v === 'string' && typeof out.description === 'string') {
        if (out.description !== v) out.description = `${out.description} ${v}`;
      } else if (!Object.hasOwn(out, k)) {
        out[k] = v;
      }
    }
    if (m[CUT] && !out[CUT]) out[CUT] = m[CUT];
  }
  return out;
}

/** `anyOf` of objects, approximated: properties united, required only where every variant requires it. */
export function mergeAny(members: Node[]): Node {
  const out = mergeAll(members.map((m) => ({ ...m, required: undefined })));
  delete out.required;
  const req = members.map((m) => new Set((m.required as string[] | undefined) ?? []));
  const all = [...(req[0] ?? [])].filter((n) => req.every((r) => r.has(n)));
  if (all.length) out.required = all;
  const t = new Set(members.flatMap((m) => types(m) ?? []));
  if (t.size) out.type = [...t];
  else delete out.type;
  return out;
}

/** Text for a union of pure constraints, e.g. anyOf [{required:[a]},{required:[b]}]. */
function unionText(members: Node[]): string {
  const named = members.map((m) => (Array.isArray(m.required) ? quote(m.required, 60) : quote(Object.keys(m), 60)));
  return `at least one of: ${named.join(' | ')}`;
}

const ROOT_DROPPED = ['not', 'if', 'then', 'else', 'enum', 'const', 'dependentRequired', 'dependentSchemas'];

/**
 * The root as an object schema without combinators, or a refusal when the
 * root cannot describe an object (MCP tool arguments are always an object).
 */
export function coerceRoot(root: Node, notes: Notes): { ok: true; node: Node } | { ok: false; code: 'root_not_object'; reason: string } {
  let node: Node = root;
  if (node[CUT]) {
    notes.add('root_coerced', '', `the root was cut (${node[CUT]}); any arguments object is accepted`);
    return { ok: true, node: { type: ['object'] } };
  }
  const described: string[] = [];
  for (let round = 0; round < 8 && (node.allOf || node.anyOf || node.oneOf); round++) {
    const { allOf, anyOf, oneOf, ...rest } = node;
    const parts: Node[] = [rest];
    if (Array.isArray(allOf)) {
      parts.push(...(allOf as Node[]));
      notes.add('all_of_merged', '/allOf', `${allOf.length} root allOf member(s) merged into the root`);
    }
    for (const [name, list] of [
      ['anyOf', anyOf],
      ['oneOf', oneOf],
    ] as const) {
      if (!Array.isArray(list)) continue;
      const members = list as Node[];
      const objects = members.filter((m) => objectish(m) && (isObj(m.properties) || types(m)));
      const constraints = members.filter((m) => !objectish(m) || !(isObj(m.properties) || types(m)));
      if (objects.length) {
        parts.push(mergeAny(objects));
        notes.add('union_merged', `/${name}`, `${objects.length} root ${name} variant(s) merged into one object`);
      }
      if (constraints.length) {
        described.push(objects.length ? `variants not merged: ${constraints.length}` : unionText(constraints));
        notes.add('root_keyword_dropped', `/${name}`, `${constraints.length} root ${name} member(s) that are not objects dropped`);
      }
    }
    node = mergeAll(parts);
  }
  const conditions: string[] = [];
  for (const k of ['allOf', 'anyOf', 'oneOf', ...ROOT_DROPPED]) {
    if (node[k] === undefined) continue;
    if (k === 'enum' || k === 'const' || k === 'dependentRequired') described.push(constraintText(k, node[k]));
    else if (k !== 'allOf' && k !== 'anyOf' && k !== 'oneOf') conditions.push(k);
    notes.add('root_keyword_dropped', `/${k}`, `${k} is not allowed at the root`);
    delete node[k];
  }
  if (conditions.length) described.push(`conditions not shown: ${conditions.join(', ')}`);
  const t = types(node);
  if (t && !t.includes('object')) {
    return {
      ok: false,
      code: 'root_not_object',
      reason: `the root schema describes ${quote(t)}, not an object (MCP tool arguments are an object)`,
    };
  }
  if (!t || t.length !== 1) {
    if (t) notes.add('root_coerced', '/type', `root type ${quote(t)} narrowed to "object"`);
    node.type = ['object'];
  }
  if (described.length) {
    const base = typeof node.description === 'string' ? `${node.description} ` : '';
    node.description = `${base}(${described.join('; ')})`;
  }
  return { ok: true, node };
}
