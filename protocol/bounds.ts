/**
 * The bounds on what one server may hand us, whatever it is (docs/design.md,
 * "Rules", 1: a server is untrusted input; "Bounds"). A catalogue past any of
 * them is refused with ALBEDO_CATALOGUE_TOO_LARGE naming the server, on first
 * discovery and on rediscovery alike. Pure functions, no I/O.
 */

/** Nesting of any value in a catalogue (a tool's schema included). JSON Schema in the wild stays under 20. */
export const MAX_DEPTH = 64;
/** Items in one list (tools, resources, resource templates or prompts) of one server. */
export const MAX_LIST_ITEMS = 10_000;
/** The whole catalogue of one server, as JSON text (the four lists together). */
export const MAX_CATALOGUE_BYTES = 32 * 1024 * 1024;

export type BoundKind = 'depth' | 'items' | 'bytes';

/**
 * How deeply `value` nests (a scalar is 0, `{}` or `[]` is 1), walking
 * iteratively so a hostile value cannot overflow the stack, and stopping as
 * soon as `limit` is passed (returns `limit + 1` then).
 */
export function depthOf(value: unknown, limit = MAX_DEPTH): number {
  if (value === null || typeof value !== 'object') return 0;
  let max = 0;
  // Two stacks rather than one of pairs: no allocation per object visited (it runs on every result).
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length) {
    const v = values.pop()!;
    const d = depths.pop()!;
    if (d > max) {
      max = d;
      if (max > limit) return limit + 1;
    }
    if (Array.isArray(v)) {
      for (const x of v) {
        if (x !== null && typeof x === 'object') {
          values.push(x);
          depths.push(d + 1);
        }
      }
    } else {
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') {
          values.push(x);
          depths.push(d + 1);
        }
      }
    }
  }
  return max;
}

/** Nesting any value may have to cross a thread boundary (structured clone recurses, and past a few thousand levels drops or throws). */
export const MAX_ENVELOPE_DEPTH = 256;

/** How deeply a value nests and how many string characters it holds. */
export interface Shape {
  depth: number;
  chars: number;
}

/**
 * `depthOf` and the total length of the strings in `value` (property names
 * aside), in one iterative walk that stops once `limit` is passed (depth
 * `limit + 1` then). For what crosses threads: the depth decides whether it
 * can, the characters whether it is large.
 */
export function shapeOf(value: unknown, limit = MAX_ENVELOPE_DEPTH): Shape {
  if (typeof value === 'string') return { depth: 0, chars: value.length };
  if (value === null || typeof value !== 'object') return { depth: 0, chars: 0 };
  let depth = 0;
  let chars = 0;
  // Two stacks rather than one of pairs: no allocation per object visited.
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length) {
    const v = values.pop()!;
    const d = depths.pop()!;
    if (d > depth) {
      depth = d;
      if (depth > limit) return { depth: limit + 1, chars };
    }
    const items: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const x of items) {
      if (typeof x === 'string') chars += x.length;
      else if (x !== null && typeof x === 'object') {
        values.push(x);
        depths.push(d + 1);
      }
    }
  }
  return { depth, chars };
}

/**
 * A copy of `value` whose objects nest at most `limit` levels; anything
 * deeper is replaced by the string "[nested too deep]". For server data
 * carried in our errors (a JSON-RPC error's `data`), which is shown, never
 * trusted. Recursion is bounded by `limit`.
 */
export function pruned(value: unknown, limit = 32): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (limit <= 0) return '[nested too deep]';
  if (Array.isArray(value)) return value.map((v) => pruned(v, limit - 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    Object.defineProperty(out, k, { value: pruned(v, limit - 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
