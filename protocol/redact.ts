/**
 * Secret values kept out of text Albedo composes from a server's output (its
 * stderr tail, lines on stdout that are not JSON-RPC, an HTTP error body's
 * excerpt, the server's error messages and error data, every warning): every
 * value the resolved server was given that may be a secret — its environment
 * (HOME, PATH and TMPDIR aside), its header values (and the credential after
 * an auth scheme, Basic's decoded `user:pass` and password), its OAuth
 * client's secrets — and the OAuth tokens a link sends (added to a
 * connection's live `Redactor` as they change) is cut out, in each of the
 * forms protocol/redact-forms.ts lists (JSON-, URL- and HTML-escaped…). A
 * value shorter than four characters is not cut (no secret is that short,
 * and cutting "1" or "on" would shred the text). Pure; no side effects.
 *
 * Text is redacted whole and only then cut (`redactThenCut`): a cut never
 * leaves part of a secret behind. Where a cut breaks a secret — ours, or one
 * made before the text reached us (the stderr tail's window) — every
 * fragment of it at the cut edge is dropped, however short: the text is
 * already cut there, so a few characters more cost nothing.
 */
import { MIN_SECRET_LENGTH, cleanSecrets, formsOf, secretValues } from './redact-forms.ts';

export { MIN_SECRET_LENGTH, secretValues };

/** What stands in for a secret. */
export const REDACTED = '[redacted]';

/** At most this many live values (tokens as they rotate) are kept besides the configured ones. */
const MAX_LIVE = 16;
/** Error data is walked at most this deep and this many values far; the rest is replaced. */
const DATA_DEPTH = 64;
const DATA_NODES = 20_000;
const PRUNED = '[not shown]';

/**
 * The secrets of one connection with their forms computed once: the
 * configured values, and live ones (the OAuth tokens a link sends) added as
 * they change — the forms are rebuilt only then.
 */
export class Redactor {
  readonly #base: string[];
  #live: string[] = [];
  #forms: string[] = [];
  #longest = 0;

  constructor(values: readonly string[] = []) {
    this.#base = cleanSecrets(values);
    this.#build();
  }

  /** Adds values that are secrets from now on (a token sent, a refresh token); nothing is rebuilt when none is new. */
  add(values: readonly (string | undefined)[]): void {
    let fresh = false;
    for (const v of values) {
      if (typeof v !== 'string' || v.length < MIN_SECRET_LENGTH || this.#base.includes(v) || this.#live.includes(v)) continue;
      this.#live.unshift(v);
      fresh = true;
    }
    if (!fresh) return;
    if (this.#live.length > MAX_LIVE) this.#live.length = MAX_LIVE;
    this.#build();
  }

  #build(): void {
    const forms = formsOf(cleanSecrets([...this.#base, ...this.#live]));
    // A marker already in the text (data redacted before) is never split either: it is a span like a secret.
    this.#forms = forms.length ? [...forms, REDACTED] : forms;
    this.#longest = this.#forms.reduce((n, f) => Math.max(n, f.length), 0);
  }

  /** Every secret value, longest first. */
  get values(): string[] {
    return cleanSecrets([...this.#base, ...this.#live]);
  }

  /** `text` with every occurrence of each secret's forms replaced by `[redacted]`. */
  redact(text: string): string {
    if (!this.#forms.length || !text) return text;
    return render(text, spansOf(text, this.#forms), 0, text.length);
  }

  /** `text` redacted, then cut (see `redactThenCut`). */
  cut(text: string, o: CutOptions): string {
    return cutText(text, this.#forms, this.#longest, o);
  }

  /**
   * `value` (an error's data) with every string in it, keys included,
   * redacted: a copy, walked at most DATA_DEPTH levels and DATA_NODES values,
   * what lies beyond shown as a placeholder.
   */
  data(value: unknown): unknown {
    if (!this.#forms.length) return value;
    const budget = { left: DATA_NODES };
    const walk = (v: unknown, depth: number): unknown => {
      if (typeof v === 'string') return this.redact(v);
      if (v === null || typeof v !== 'object') return v;
      if (depth >= DATA_DEPTH || --budget.left < 0) return PRUNED;
      if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        // defineProperty: a `__proto__` key stays a key.
        Object.defineProperty(out, this.redact(k), { value: walk(x, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    };
    return walk(value, 0);
  }
}

/** Secret values as a list (forms computed on each call), or a connection's Redactor. */
export type Secrets = readonly string[] | Redactor;

/** A list's Redactor, made once per list (a caller passes the same list again; lists are never changed). */
const made = new WeakMap<readonly string[], Redactor>();
function redactorOf(s: Secrets): Redactor {
  if (s instanceof Redactor) return s;
  let r = made.get(s);
  if (!r) made.set(s, (r = new Redactor(s)));
  return r;
}

/**
 * Where the forms occur in `text`, overlaps included, as sorted disjoint
 * [start, end) spans. Each form's matches are merged as they are found (a
 * run of overlapping matches is one span), so the list stays as short as
 * the text has separate occurrences.
 */
function spansOf(text: string, forms: readonly string[]): [number, number][] {
  const found: [number, number][] = [];
  for (const f of forms) {
    let last: [number, number] | undefined;
    for (let i = text.indexOf(f); i >= 0; i = text.indexOf(f, i + 1)) {
      if (last && i <= last[1]) last[1] = i + f.length;
      else found.push((last = [i, i + f.length]));
    }
  }
  if (found.length < 2) return found;
  found.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [s, e] of found) {
    const last = merged[merged.length - 1];
    // Touching spans merge too: two secrets side by side are one [redacted].
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  return merged;
}

/** `text` from `from` to `to` with every span in it (or part of one) shown as `[redacted]`. */
function render(text: string, spans: readonly [number, number][], from: number, to: number): string {
  let out = '';
  let at = from;
  for (const [s, e] of spans) {
    if (e <= from || s >= to) continue;
    out += text.slice(at, Math.max(at, s)) + REDACTED;
    at = Math.min(e, to);
  }
  return out + text.slice(at, to);
}

/** `text` with every occurrence of each secret (in each of its forms) replaced by `[redacted]`. */
export function redact(text: string, secrets: Secrets): string {
  return redactorOf(secrets).redact(text);
}

/** `value` (an error's data) with every string in it redacted (see `Redactor.data`). */
export function redactData(value: unknown, secrets: Secrets): unknown {
  return redactorOf(secrets).data(value);
}

/**
 * How many characters to drop at a cut edge of `text`: the longest part
 * ending at its end that begins a form (`end`), or beginning at its start
 * that ends one (`start`). A whole form is a span already; only fragments
 * count. Candidates are found by the fragment's first (or last) character.
 */
function fragment(text: string, forms: readonly string[], edge: 'start' | 'end'): number {
  let most = 0;
  const n = text.length;
  for (const f of forms) {
    if (edge === 'end') {
      // The earliest start found is the longest fragment.
      for (let p = text.indexOf(f[0]!, Math.max(0, n - f.length + 1)); p >= 0 && n - p > most; p = text.indexOf(f[0]!, p + 1)) {
        if (f.startsWith(text.slice(p))) {
          most = n - p;
          break;
        }
      }
    } else {
      const c = f[f.length - 1]!;
      for (let q = text.lastIndexOf(c, Math.min(n, f.length - 1) - 1); q >= 0 && q + 1 > most; q = q ? text.lastIndexOf(c, q - 1) : -1) {
        if (f.endsWith(text.slice(0, q + 1))) {
          most = q + 1;
          break;
        }
      }
    }
  }
  return most;
}

export interface CutOptions {
  /** Which end of the text is kept. */
  keep: 'head' | 'tail';
  /** The most characters kept (a `[redacted]` counts its own length and is never split). */
  max: number;
  /** The text given was already cut on the far side of what is kept (its end for `head`, its start for `tail`). */
  cut?: boolean;
}

/**
 * `text` redacted, then cut to `max` characters at one end; a secret broken
 * by the cut (or by an earlier one, `cut`) leaves nothing at the edge. Only
 * the part that can be kept is searched: `max` plus the longest form's
 * length, the rest counting as cut.
 */
export function redactThenCut(text: string, secrets: Secrets, o: CutOptions): string {
  return redactorOf(secrets).cut(text, o);
}

function cutText(text: string, forms: readonly string[], longest: number, o: CutOptions): string {
  const head = o.keep === 'head';
  const window = o.max + longest;
  let cut = o.cut ?? false;
  if (text.length > window) {
    cut = true;
    text = head ? text.slice(0, window) : text.slice(text.length - window);
  }
  const spans = forms.length ? spansOf(text, forms) : [];
  // From the kept end, take plain characters and whole [redacted]s while they fit.
  let room = o.max;
  let at = head ? 0 : text.length;
  for (const [s, e] of head ? spans : [...spans].reverse()) {
    const plain = head ? s - at : at - e;
    if (plain >= room) break;
    room -= plain;
    at = head ? s : e;
    if (REDACTED.length > room) {
      room = 0;
      break;
    }
    room -= REDACTED.length;
    at = head ? e : s;
  }
  at = head ? Math.min(text.length, at + room) : Math.max(0, at - room);
  let from = 0;
  let to = text.length;
  if (head) {
    if (at < to) {
      cut = true;
      to = at;
    }
    if (cut && forms.length) to -= fragment(text.slice(0, to), forms, 'end');
  } else {
    if (at > from) {
      cut = true;
      from = at;
    }
    if (cut && forms.length) from += fragment(text.slice(from), forms, 'start');
  }
  return render(text, spans, from, to);
}
