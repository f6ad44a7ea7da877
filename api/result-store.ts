/**
 * Where the parts of results cut to their budget are kept (api/results.ts),
 * per session, in the memory of the session's owner (the daemon, or the
 * embedding process): bounded per session and in all, the oldest parts
 * going first (never the one just kept), each counted with an overhead so
 * many tiny parts cost what they hold; forgotten when the session closes.
 * Sizes are characters (UTF-16 code units): memory is up to twice as many
 * bytes.
 */
import { AlbedoError } from '../protocol/errors.ts';

/** What one session may keep (characters of kept parts, overheads included). */
export const MAX_KEPT_PER_SESSION = 64 * 1024 * 1024;
/** What all sessions of one owner may keep. */
export const MAX_KEPT_TOTAL = 256 * 1024 * 1024;
/** At most this many parts per session. */
export const MAX_PARTS_PER_SESSION = 10_000;
/** What a part costs beyond its characters (its record, its id). */
const PART_OVERHEAD = 256;
/** The smallest page a read returns (characters). */
export const MIN_PAGE = 1_000;
/** How far back from the page's end a clean boundary is looked for (a share of the page). */
const BOUNDARY_WINDOW = 0.2;

export type KeptKind = 'text' | 'base64' | 'json';

export interface Kept {
  id: string;
  kind: KeptKind;
  /** What the part was: `text`, `image`, `audio`, `resource`, `structuredContent`, `content`, `messages`. */
  what: string;
  mimeType?: string;
  data: string;
  /** Where the context's copy stopped (0: nothing of it was shown). */
  shown: number;
  /** The page size reads default to: the budget the cut was made under (characters). */
  page: number;
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

/**
 * Where a piece of `text` from `from` of at most `max` characters ends: at
 * the end when it fits; else, for text, after the last line break in the
 * last fifth of the window, else after the last space there, else at
 * `max`; never inside a surrogate pair.
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
  if (end - 1 > from && c >= 0xd800 && c <= 0xdbff) end--;
  return end;
}

interface SessionParts {
  parts: Map<string, Kept>;
  size: number;
}

const cost = (k: Kept): number => k.data.length + PART_OVERHEAD;

/** Keeps cut parts per session, bounded. */
export class ResultStore {
  #bySession = new Map<string, SessionParts>();
  /** Every part, oldest first: id → session. */
  #order = new Map<string, string>();
  #total = 0;
  #counter = 0;

  /** Keeps `part` for `session`; returns its id. Older parts go when a bound is passed. */
  keep(session: string, part: Omit<Kept, 'id'>): string {
    const id = `r${(++this.#counter).toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    let mine = this.#bySession.get(session);
    if (!mine) this.#bySession.set(session, (mine = { parts: new Map(), size: 0 }));
    const k: Kept = { ...part, id };
    mine.parts.set(id, k);
    mine.size += cost(k);
    this.#total += cost(k);
    this.#order.set(id, session);
    this.#evict(session, mine, id);
    return id;
  }

  #remove(session: string, id: string): void {
    const mine = this.#bySession.get(session);
    const k = mine?.parts.get(id);
    if (!mine || !k) return;
    mine.parts.delete(id);
    mine.size -= cost(k);
    this.#total -= cost(k);
    this.#order.delete(id);
  }

  #evict(session: string, mine: SessionParts, newest: string): void {
    for (const id of mine.parts.keys()) {
      if ((mine.size <= MAX_KEPT_PER_SESSION && mine.parts.size <= MAX_PARTS_PER_SESSION) || id === newest) break;
      this.#remove(session, id);
    }
    // Across sessions, the oldest parts first, whoever kept them.
    for (const [id, s] of this.#order) {
      if (this.#total <= MAX_KEPT_TOTAL) break;
      if (id !== newest) this.#remove(s, id);
    }
  }

  /** A page of a kept part: about `limit` characters (the cut's own budget when absent) from `offset`, ending at a clean boundary. */
  read(session: string, id: string, offset = 0, limit?: number): ResultPage {
    const k = this.#bySession.get(session)?.parts.get(id);
    if (!k) {
      const message =
        `no kept result ${JSON.stringify(id)} in this session ` +
        '(results go with their session, the oldest first when too many are kept)';
      throw new AlbedoError('ALBEDO_NOT_FOUND', message, { outcome: 'not_run' });
    }
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > k.data.length) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `offset must be an integer from 0 to ${k.data.length}`, { outcome: 'not_run' });
    }
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0)) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'limit must be a positive integer', { outcome: 'not_run' });
    }
    const end = cutAt(k.data, offset, Math.max(MIN_PAGE, limit ?? k.page), k.kind);
    const page: ResultPage = {
      id,
      kind: k.kind,
      what: k.what,
      offset,
      data: k.data.slice(offset, end),
      next: end < k.data.length ? end : null,
      total: k.data.length,
    };
    if (k.mimeType) page.mimeType = k.mimeType;
    return page;
  }

  /** Forgets a session's parts (closed). */
  drop(session: string): void {
    const mine = this.#bySession.get(session);
    if (!mine) return;
    for (const id of [...mine.parts.keys()]) this.#remove(session, id);
    this.#bySession.delete(session);
  }

  /** What is kept now (characters with overheads), for tests. */
  get size(): number {
    return this.#total;
  }
}
