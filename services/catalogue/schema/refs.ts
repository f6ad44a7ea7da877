/**
 * Local `$ref` inlining. Two layers, so that nothing is ever fetched:
 *
 * 1. `prepare` copies the untrusted input into plain JSON (iteratively, so any
 *    nesting is safe; deeper than BOUNDS.maxRawDepth is cut), dropping what JSON
 *    cannot hold, and replaces every `$ref` that is not a same-document JSON
 *    Pointer that resolves (`#`, `#/$defs/x`, …) with a cut marker: network
 *    (`http://…`), file (`file:///etc/passwd`), relative (`other.json`), anchor
 *    (`#name`) and dangling references never reach the library.
 * 2. `dereferenceLocal` runs @apidevtools/json-schema-ref-parser with external
 *    resolution, the file resolver and the HTTP resolver all off, and
 *    `circular: true`, so a cycle becomes a JS object cycle that the canonical
 *    walk cuts where it recurs (one level of a recursive type is kept).
 */
import $RefParser from '@apidevtools/json-schema-ref-parser';
import { BOUNDS } from './profiles.ts';
import { Notes, quote } from './text.ts';

/** The key of a cut marker object; its value is the reason. Incoming keys equal to it are dropped. */
export const CUT_KEY = '\u0000albedo-cut';

/** ref-parser options: same-document references only. */
export const REF_OPTIONS = {
  resolve: { external: false, file: false, http: false },
  dereference: { circular: true as const },
  continueOnError: false,
  mutateInputSchema: true,
};

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Sets `obj[key]` as an own data property, even for `__proto__`. */
function put(obj: Record<string, Json> | Json[], key: string | number, value: Json): void {
  // A plain assignment makes the same own data property on these fresh containers, several times faster; only
  // `__proto__` would set the prototype instead.
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else (obj as Record<string, Json>)[key] = value;
}

/**
 * A plain-JSON copy of `input`: non-JSON values (undefined, functions, symbols,
 * NaN, ±Infinity, bigint, class instances) are dropped, and containers deeper
 * than BOUNDS.maxRawDepth become cut markers. Returns undefined when the input
 * itself is not JSON.
 */
export function toJson(input: unknown, notes: Notes): Json | undefined {
  const scalar = (v: unknown): Json | undefined => {
    if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? (Object.is(v, -0) ? 0 : v) : undefined;
    return undefined;
  };
  const root = scalar(input);
  if (root !== undefined || !(Array.isArray(input) || isPlainObject(input))) return root;
  const out: Json = Array.isArray(input) ? [] : {};
  const stack: Array<{ src: unknown; dst: Json[] | Record<string, Json>; depth: number }> = [{ src: input, dst: out, depth: 0 }];
  const seen = new Set<unknown>([input]);
  let cutDeep = 0;
  while (stack.length) {
    const { src, dst, depth } = stack.pop()!;
    const entries: Array<[string | number, unknown]> = Array.isArray(src) ? src.map((v, i) => [i, v]) : Object.entries(src as object);
    for (const [k, v] of entries) {
      if (k === CUT_KEY) continue;
      const s = scalar(v);
      if (s !== undefined) {
        put(dst, Array.isArray(dst) ? dst.length : k, s);
        continue;
      }
      if (!(Array.isArray(v) || isPlainObject(v)) || seen.has(v)) {
        if (Array.isArray(dst)) put(dst, dst.length, null);
        continue;
      }
      if (depth + 1 > BOUNDS.maxRawDepth) {
        cutDeep++;
        put(dst, Array.isArray(dst) ? dst.length : k, { [CUT_KEY]: 'nesting deeper than the raw input bound' });
        continue;
      }
      const child: Json[] | Record<string, Json> = Array.isArray(v) ? [] : {};
      put(dst, Array.isArray(dst) ? dst.length : k, child);
      seen.add(v);
      stack.push({ src: v, dst: child, depth: depth + 1 });
    }
  }
  if (cutDeep) notes.add('raw_depth_cut', '', `${cutDeep} subtree(s) nested deeper than ${BOUNDS.maxRawDepth} JSON levels were cut`);
  return out;
}

/** Resolves a same-document JSON Pointer (`#/a/b`) the way ref-parser does (percent-decoding, ~0/~1), own keys only. */
function resolvePointer(root: Json, ref: string): Json | undefined {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: Json | undefined = root;
  for (const raw of ref.slice(2).split('/')) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= node.length) return undefined;
      node = node[Number(token)];
    } else if (node !== null && typeof node === 'object' && Object.hasOwn(node, token)) {
      node = node[token];
    } else {
      return undefined;
    }
  }
  return node;
}

/** Whether `node` is an object whose string `$ref` is not a resolvable same-document pointer (to an object or boolean). */
function badRef(doc: Json, node: Json, path: string, notes: Notes): Json | undefined {
  if (node === null || typeof node !== 'object' || Array.isArray(node) || typeof node.$ref !== 'string') return undefined;
  const ref = node.$ref;
  const target = ref.startsWith('#') ? resolvePointer(doc, ref) : undefined;
  if (target !== undefined && target !== null && (typeof target === 'object' || typeof target === 'boolean')) return undefined;
  const external = !ref.startsWith('#');
  notes.add(
    external ? 'ref_external' : 'ref_unresolved',
    path,
    `${quote(ref)} ${external ? 'not fetched' : 'does not resolve in this schema'}`,
  );
  return { [CUT_KEY]: external ? `external reference ${quote(ref)} not fetched` : `unresolved reference ${quote(ref)}` };
}

/**
 * Replaces, in place, every object whose `$ref` is a string that is not a
 * resolvable same-document pointer with a cut marker; returns the (possibly
 * replaced) root.
 */
export function sanitiseRefs(doc: Json, notes: Notes): Json {
  const rootMarker = badRef(doc, doc, '', notes);
  if (rootMarker) return rootMarker;
  const stack: Array<{ node: Json; path: string }> = [{ node: doc, path: '' }];
  while (stack.length) {
    const { node, path } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    const entries: Array<[string | number, Json]> = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node);
    for (const [k, v] of entries) {
      if (v === null || typeof v !== 'object') continue;
      const p = `${path}/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`;
      const marker = badRef(doc, v, p, notes);
      if (marker) put(node as Record<string, Json>, k, marker);
      else stack.push({ node: v, path: p });
    }
  }
  return doc;
}

/** ref-parser's dereference with REF_OPTIONS (exported so tests can prove the library alone fetches nothing). */
export async function dereferenceLocal(schema: object): Promise<unknown> {
  return $RefParser.dereference(schema as never, REF_OPTIONS);
}

/**
 * The input as plain JSON with its local references inlined (possibly as JS
 * object cycles), or undefined when the input is not JSON. A failure of the
 * library (it should not happen after sanitising) leaves the references for
 * the canonical walk, which cuts them.
 */
export async function inlineRefs(input: unknown, notes: Notes): Promise<unknown> {
  const json = toJson(input, notes);
  if (json === undefined || json === null || typeof json !== 'object' || Array.isArray(json)) return json;
  const root = sanitiseRefs(json, notes);
  if (root === null || typeof root !== 'object' || Array.isArray(root) || CUT_KEY in root) return root;
  if (!hasLocalRef(root)) return root;
  try {
    const out = await dereferenceLocal(root);
    notes.add('ref_inlined', '', 'same-document $ref pointers inlined');
    return out;
  } catch (err) {
    notes.add('ref_unresolved', '', `references left uninlined (${quote(err instanceof Error ? err.message : String(err))})`);
    return root;
  }
}

function hasLocalRef(root: Json): boolean {
  const stack: Json[] = [root];
  while (stack.length) {
    const n = stack.pop()!;
    if (n === null || typeof n !== 'object') continue;
    if (!Array.isArray(n) && typeof n.$ref === 'string') return true;
    for (const v of Array.isArray(n) ? n : Object.values(n)) if (v !== null && typeof v === 'object') stack.push(v);
  }
  return false;
}
