/**
 * Result budgets (issue 13, item 2): what one call's result may put in the
 * model's context, and the rest kept to read page by page. A tool result
 * (or a resource read) larger than its budget keeps its first part — text
 * cut at a clean boundary (a line break, else a space, never inside a
 * surrogate pair) — and a note saying how much was cut and how to read on;
 * each cut part is kept whole under an id, so `readResult(id, offset)` (the
 * `mcp_read_result` tool, the API) returns it to the last byte. Images,
 * audio and blobs over the budget are replaced by a note with their type and
 * size (kept the same way, as base64 text). `structuredContent` is kept
 * whole when it fits and replaced by a note when not. A tool's `isError`
 * result keeps its first text block whole. Nothing is dropped silently:
 * every cut is in a note and in `_meta["albedo/cut"]`.
 *
 * The kept parts live in memory on the session's owner (the daemon, or the
 * embedding process), bounded per session and in all, and go with the
 * session (closed, or its owner stopped).
 */
import { AlbedoError } from '../protocol/errors.ts';
import { MAX_RESULT_HINT_CHARS } from '../protocol/composer.ts';
import { CHARS_PER_TOKEN } from '../services/catalogue/tokens.ts';

/** What one session may keep (characters of kept parts); the oldest go first. */
export const MAX_KEPT_PER_SESSION = 64 * 1024 * 1024;
/** What all sessions of one owner may keep. */
export const MAX_KEPT_TOTAL = 256 * 1024 * 1024;
/** The smallest page a read returns, whatever the budget (characters). */
const MIN_PAGE = 1_000;
/** How far back from the budget a clean boundary is looked for (a share of the page). */
const BOUNDARY_WINDOW = 0.2;

export type KeptKind = 'text' | 'base64' | 'json';

export interface Kept {
  id: string;
  kind: KeptKind;
  /** What the part was: `text`, `image`, `audio`, `resource`, `structuredContent`. */
  what: string;
  mimeType?: string;
  data: string;
  /** Where the context's copy stopped (0: nothing of it was shown). */
  shown: number;
}

/** One page of a kept part. */
export interface ResultPage {
  id: string;
  kind: KeptKind;
  what: string;
  mimeType?: string;
  offset: number;
  /** The characters from `offset`. */
  data: string;
  /** Where the next page starts; null at the end. */
  next: number | null;
  total: number;
}

/** Keeps cut parts per session, bounded. */
export class ResultStore {
  #bySession = new Map<string, Map<string, Kept>>();
  #total = 0;
  #counter = 0;

  /** Keeps `part` for `session`; returns its id. Older parts go when a bound is passed. */
  keep(session: string, part: Omit<Kept, 'id'>): string {
    const id = `r${(++this.#counter).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    let mine = this.#bySession.get(session);
    if (!mine) this.#bySession.set(session, (mine = new Map()));
    mine.set(id, { ...part, id });
    this.#total += part.data.length;
    this.#evict(session);
    return id;
  }

  #size(m: Map<string, Kept>): number {
    let n = 0;
    for (const k of m.values()) n += k.data.length;
    return n;
  }

  #evict(session: string): void {
    const mine = this.#bySession.get(session)!;
    let size = this.#size(mine);
    // Never the newest part: the result just cut must stay readable.
    for (const [id, k] of mine) {
      if (size <= MAX_KEPT_PER_SESSION || mine.size <= 1) break;
      mine.delete(id);
      size -= k.data.length;
      this.#total -= k.data.length;
    }
    for (const [s, m] of this.#bySession) {
      if (this.#total <= MAX_KEPT_TOTAL) break;
      if (s === session) continue;
      this.#total -= this.#size(m);
      this.#bySession.delete(s);
    }
  }

  /** A page of a kept part: `limit` characters from `offset`, ending at a clean boundary. */
  read(session: string, id: string, offset = 0, limit = MIN_PAGE): ResultPage {
    const k = this.#bySession.get(session)?.get(id);
    if (!k) throw new AlbedoError('ALBEDO_NOT_FOUND', `no kept result ${JSON.stringify(id)} in this session (results go with their session, the oldest first when too many are kept)`, { outcome: 'not_run' });
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > k.data.length) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `offset must be an integer from 0 to ${k.data.length}`, { outcome: 'not_run' });
    }
    const end = cutAt(k.data, offset, Math.max(MIN_PAGE, limit), k.kind);
    const page: ResultPage = { id, kind: k.kind, what: k.what, offset, data: k.data.slice(offset, end), next: end < k.data.length ? end : null, total: k.data.length };
    if (k.mimeType) page.mimeType = k.mimeType;
    return page;
  }

  /** Forgets a session's parts (closed). */
  drop(session: string): void {
    const m = this.#bySession.get(session);
    if (!m) return;
    this.#total -= this.#size(m);
    this.#bySession.delete(session);
  }
}

/**
 * Where a piece of `text` from `from` of at most `max` characters ends: at
 * the end when it fits; else after the last line break in the last fifth of
 * the window, else after the last space there, else at `max` (moved back
 * one when that would split a surrogate pair). base64 and JSON pages end
 * anywhere but inside a surrogate pair.
 */
export function cutAt(text: string, from: number, max: number, kind: KeptKind = 'text'): number {
  if (text.length - from <= max) return text.length;
  let end = from + max;
  if (kind === 'text') {
    const floor = from + Math.floor(max * (1 - BOUNDARY_WINDOW));
    const nl = text.lastIndexOf('\n', end - 1);
    const sp = Math.max(text.lastIndexOf(' ', end - 1), text.lastIndexOf('\t', end - 1));
    if (nl >= floor) end = nl + 1;
    else if (sp >= floor) end = sp + 1;
  }
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return end;
}

type Block = Record<string, unknown>;
const isObj = (v: unknown): v is Block => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface BudgetOptions {
  /** The budget, in characters. */
  chars: number;
  /** Keeps a cut part; returns its id. */
  keep: (part: Omit<Kept, 'id'>) => string;
  /** The name of the tool that reads on (in the notes). */
  reader: string;
}

interface Cut {
  id: string;
  what: string;
  mimeType?: string;
  shown: number;
  total: number;
}

const size = (n: number): string => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`);

function note(c: Cut, reader: string): Block {
  const text = c.shown > 0
    ? `[Albedo: this ${c.what} was cut at ${c.shown} of ${c.total} characters to fit the result budget. The rest is kept as result ${c.id}: `
      + `call ${reader} with id "${c.id}" and offset ${c.shown} to read on.]`
    : `[Albedo: a ${c.what}${c.mimeType ? ` (${c.mimeType})` : ''} of ${size(c.total)} was left out of the context (over the result budget). `
      + `It is kept as result ${c.id}: ${reader} with id "${c.id}" returns it page by page.]`;
  return { type: 'text', text };
}

/**
 * `result` within the budget: the same object when it fits, else a copy
 * with cut parts and notes, and `_meta["albedo/cut"]` listing the cuts.
 * Works on tool results (`content`, `structuredContent`, `isError`) and on
 * resource reads (`contents`).
 */
export function budgetResult(result: unknown, o: BudgetOptions): unknown {
  if (!isObj(result)) return result;
  const cuts: Cut[] = [];
  let left = o.chars;
  const out: Block = { ...result };
  let changed = false;

  const textPart = (text: string, what: string, mimeType: string | undefined, whole: boolean): { text: string; cut?: Cut } => {
    // An error's first message is never cut (within the hard cap): the model must see why the tool failed.
    if (text.length <= left || (whole && text.length <= MAX_RESULT_HINT_CHARS)) {
      left = Math.max(0, left - text.length);
      return { text };
    }
    const room = whole ? MAX_RESULT_HINT_CHARS : left;
    const end = room >= MIN_PAGE / 2 ? cutAt(text, 0, room) : 0;
    left = 0;
    const id = o.keep({ kind: 'text', what, data: text, shown: end, ...(mimeType ? { mimeType } : {}) });
    return { text: text.slice(0, end), cut: { id, what, shown: end, total: text.length, ...(mimeType ? { mimeType } : {}) } };
  };
  const blobPart = (data: string, what: string, mimeType: string | undefined): Cut | null => {
    if (data.length <= left) {
      left -= data.length;
      return null;
    }
    const id = o.keep({ kind: 'base64', what, data, shown: 0, ...(mimeType ? { mimeType } : {}) });
    return { id, what, shown: 0, total: data.length, ...(mimeType ? { mimeType } : {}) };
  };

  if (Array.isArray(result.content)) {
    const blocks: unknown[] = [];
    let firstText = result.isError === true;
    for (const b of result.content) {
      if (!isObj(b)) { blocks.push(b); continue; }
      if (b.type === 'text' && typeof b.text === 'string') {
        const r = textPart(b.text, 'text', undefined, firstText);
        firstText = false;
        if (!r.cut) { blocks.push(b); continue; }
        changed = true;
        cuts.push(r.cut);
        if (r.text) blocks.push({ ...b, text: r.text });
        blocks.push(note(r.cut, o.reader));
      } else if ((b.type === 'image' || b.type === 'audio') && typeof b.data === 'string') {
        const c = blobPart(b.data, b.type, typeof b.mimeType === 'string' ? b.mimeType : undefined);
        if (!c) { blocks.push(b); continue; }
        changed = true;
        cuts.push(c);
        blocks.push(note(c, o.reader));
      } else if (b.type === 'resource' && isObj(b.resource)) {
        const r = b.resource;
        const mime = typeof r.mimeType === 'string' ? r.mimeType : undefined;
        if (typeof r.text === 'string') {
          const t = textPart(r.text, 'resource', mime, false);
          if (!t.cut) { blocks.push(b); continue; }
          changed = true;
          cuts.push(t.cut);
          if (t.text) blocks.push({ ...b, resource: { ...r, text: t.text } });
          blocks.push(note(t.cut, o.reader));
        } else if (typeof r.blob === 'string') {
          const c = blobPart(r.blob, 'resource', mime);
          if (!c) { blocks.push(b); continue; }
          changed = true;
          cuts.push(c);
          blocks.push(note(c, o.reader));
        } else blocks.push(b);
      } else blocks.push(b);
    }
    if (changed) out.content = blocks;
  }

  if (Array.isArray(result.contents)) {
    const items: unknown[] = [];
    let cutHere = false;
    for (const r of result.contents) {
      if (!isObj(r)) { items.push(r); continue; }
      const mime = typeof r.mimeType === 'string' ? r.mimeType : undefined;
      if (typeof r.text === 'string') {
        const t = textPart(r.text, 'resource', mime, false);
        if (!t.cut) { items.push(r); continue; }
        cutHere = true;
        cuts.push(t.cut);
        items.push({ ...r, text: `${t.text}${t.text ? '\n' : ''}${(note(t.cut, o.reader).text as string)}` });
      } else if (typeof r.blob === 'string') {
        const c = blobPart(r.blob, 'resource', mime);
        if (!c) { items.push(r); continue; }
        cutHere = true;
        cuts.push(c);
        const { blob: _b, ...rest } = r;
        items.push({ ...rest, text: note(c, o.reader).text });
      } else items.push(r);
    }
    if (cutHere) { out.contents = items; changed = true; }
  }

  if (result.structuredContent !== undefined) {
    // Structured content is counted on its own: the text beside it is usually the same data, and a harness sends one of the two.
    const json = JSON.stringify(result.structuredContent);
    if (json !== undefined && json.length > o.chars) {
      const id = o.keep({ kind: 'json', what: 'structuredContent', data: json, shown: 0 });
      const c: Cut = { id, what: 'structuredContent', shown: 0, total: json.length, mimeType: 'application/json' };
      cuts.push(c);
      delete out.structuredContent;
      out.content = [...(Array.isArray(out.content) ? out.content : []), { type: 'text', text: `${summary(result.structuredContent)} ${note(c, o.reader).text}` }];
      changed = true;
    }
  }

  if (!changed) return result;
  const meta = isObj(result._meta) ? result._meta : {};
  out._meta = { ...meta, 'albedo/cut': cuts.map((c) => ({ id: c.id, what: c.what, shown: c.shown, total: c.total, ...(c.mimeType ? { mimeType: c.mimeType } : {}) })) };
  return out;
}

/** A line about a structured value too large to show: its shape and size. */
function summary(v: unknown): string {
  const json = JSON.stringify(v) ?? '';
  if (Array.isArray(v)) return `[Albedo: the structured content is an array of ${v.length} items, ${size(json.length)} as JSON.]`;
  if (isObj(v)) {
    const keys = Object.keys(v);
    const shown = keys.slice(0, 20).map((k) => JSON.stringify(k)).join(', ');
    return `[Albedo: the structured content is an object with ${keys.length} keys (${shown}${keys.length > 20 ? ', …' : ''}), ${size(json.length)} as JSON.]`;
  }
  return `[Albedo: the structured content is ${size(json.length)} as JSON.]`;
}

/** Characters for a budget in estimated tokens. */
export const charsOf = (tokens: number): number => tokens * CHARS_PER_TOKEN;

/** A page as mcp_read_result's tool result: the characters as they are, then a note of where the page sits. */
export function pageResult(p: ResultPage): { content: Array<{ type: 'text'; text: string }>; structuredContent: Record<string, unknown> } {
  const end = p.offset + p.data.length;
  const where = p.next === null
    ? `[Albedo: characters ${p.offset}–${end} of ${p.total} of result ${p.id}; this is the end.]`
    : `[Albedo: characters ${p.offset}–${end} of ${p.total} of result ${p.id}; call mcp_read_result with offset ${p.next} for the next page.]`;
  const { data: _d, ...facts } = p;
  return { content: [{ type: 'text', text: p.data }, { type: 'text', text: where }], structuredContent: { ...facts, end } };
}
