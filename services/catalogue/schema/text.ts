/**
 * Text helpers of the normaliser: the notes it returns (bounded, one line each,
 * `<code> at <pointer>: <detail>`), description cutting with a visible marker,
 * and the wording of constraints moved into a description. All values quoted
 * here come from an untrusted server: they are shortened and JSON-quoted.
 */
import { CUT_MARK } from './profiles.ts';

/** Notes kept per schema; further ones are counted in a last note. */
const MAX_NOTES = 50;
/** Characters of a server-provided value quoted in a note or a description. */
const MAX_QUOTE = 80;
/** Characters of a JSON Pointer, and of a detail, in a note. */
const MAX_PATH = 200;
const MAX_DETAIL = 400;

/** Why a node was changed; the first word of every note, stable for callers and tests. */
export type NoteCode =
  | 'ref_inlined'
  | 'ref_external'
  | 'ref_unresolved'
  | 'cycle_cut'
  | 'depth_cut'
  | 'budget_cut'
  | 'raw_depth_cut'
  | 'invalid_schema'
  | 'invalid_keyword'
  | 'keyword_dropped'
  | 'constraint_described'
  | 'type_collapsed'
  | 'type_assumed'
  | 'items_assumed'
  | 'null_dropped'
  | 'made_nullable'
  | 'union_merged'
  | 'union_collapsed'
  | 'all_of_merged'
  | 'enum_dropped'
  | 'const_to_enum'
  | 'properties_cut'
  | 'property_dropped'
  | 'property_renamed'
  | 'map_dropped'
  | 'json_text'
  | 'description_cut'
  | 'root_coerced'
  | 'root_keyword_dropped'
  | 'size_fitted';

export class Notes {
  readonly list: string[] = [];
  #extra = 0;
  #counted = new Map<string, number>();
  #first: string[] = [];

  /** A copy to try one fitting step on; the original is kept for the next one. */
  fork(): Notes {
    const n = new Notes();
    n.list.push(...this.list);
    n.#extra = this.#extra;
    n.#counted = new Map(this.#counted);
    n.#first = [...this.#first];
    return n;
  }

  add(code: NoteCode, path: string, detail: string): void {
    // Paths hold property names, which are server data of any length.
    if (this.list.length < MAX_NOTES) this.list.push(`${code} at ${cut(path || '/', MAX_PATH, '…')}: ${cut(detail, MAX_DETAIL, '…')}`);
    else this.#extra++;
  }

  /** A note that leads the list whatever else was noted (the size fitting, which explains the other cuts). */
  lead(code: NoteCode, detail: string): void {
    this.#first.push(`${code} at /: ${detail}`);
  }

  /** Dropped keywords are counted and reported once per keyword, so a big schema gives one line per keyword, not per node. */
  dropped(keyword: string): void {
    this.count('keyword_dropped', quote(keyword, 40));
  }

  /** A change counted and reported once per (code, label), e.g. descriptions cut. */
  count(code: NoteCode, label: string): void {
    const k = `${code}\u0000${label}`;
    this.#counted.set(k, (this.#counted.get(k) ?? 0) + 1);
  }

  /** The final list (counted changes and the overflow count appended). */
  finish(): string[] {
    const out = [...this.#first, ...this.list];
    let more = this.#extra;
    for (const [k, n] of [...this.#counted].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      const [code, label] = k.split('\u0000');
      if (out.length < MAX_NOTES + 10) out.push(`${code} at *: ${label} (${n} place${n === 1 ? '' : 's'})`);
      else more++;
    }
    if (more) out.push(`notes_cut at *: ${more} more notes`);
    return out;
  }
}

/** JSON Pointer segment escaping (RFC 6901). */
export function seg(key: string | number): string {
  return `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** A value as short JSON text, for notes and descriptions. */
export function quote(value: unknown, max = MAX_QUOTE): string {
  let s: string;
  try {
    s = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    s = '?';
  }
  return cut(s, max, '…');
}

/** Cuts `text` to `max` characters (marker included), never splitting a surrogate pair. */
export function cut(text: string, max: number, mark = CUT_MARK): string {
  if (text.length <= max) return text;
  if (max <= mark.length) return mark.slice(0, Math.max(0, max));
  let end = max - mark.length;
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return text.slice(0, end) + mark;
}

/** Words for a constraint keyword moved into a description, e.g. `pattern ^a+$`. */
export function constraintText(keyword: string, value: unknown): string {
  switch (keyword) {
    case 'enum': {
      const values = Array.isArray(value) ? value : [];
      const shown = values
        .slice(0, 20)
        .map((v) => quote(v, 40))
        .join(', ');
      return `one of ${values.length} values: ${shown}${values.length > 20 ? ', …' : ''}`;
    }
    case 'const':
      return `must be ${quote(value)}`;
    case 'default':
      return `default ${quote(value)}`;
    case 'examples':
      return `examples ${quote(value)}`;
    case 'format':
      return `format ${quote(value, 40)}`;
    case 'pattern':
      return `pattern ${quote(value)}`;
    case 'required':
      return `required ${quote(value)}`;
    default:
      return `${keyword} ${quote(value)}`;
  }
}

/**
 * The description with moved constraints appended, cut to `max` (0: none).
 * `max` applies to descriptions inside the schema; the caller bounds them all.
 */
export function withConstraints(description: unknown, parts: readonly string[], max: number): string | undefined {
  const base = typeof description === 'string' ? description : '';
  const extra = parts.length ? `(${parts.join('; ')})` : '';
  const text = base && extra ? `${base} ${extra}` : base || extra;
  if (!text || max <= 0) return undefined;
  return cut(text, max);
}
