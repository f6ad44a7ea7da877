/**
 * Secret values kept out of text Albedo composes from a server's output (its
 * stderr tail, lines on stdout that are not JSON-RPC, an HTTP error body's
 * excerpt, the server's error messages, every warning): every value the
 * resolved server was given that may be a secret — its environment (HOME,
 * PATH and TMPDIR aside), its header values, its OAuth client's secrets — is
 * cut out. A value shorter than four characters is not cut (no secret is
 * that short, and cutting "1" or "on" would shred the text). Pure; no side
 * effects.
 *
 * Text is redacted whole and only then cut (`redactThenCut`): a cut never
 * leaves part of a secret behind. Where a cut breaks a secret — ours, or one
 * made before the text reached us (the stderr tail's window) — every
 * fragment of it at the cut edge is dropped, however short: the text is
 * already cut there, so a few characters more cost nothing.
 */
import type { ResolvedServer } from './config.ts';

/** What the launcher passes from the daemon's own environment: not the server's values. */
const DAEMON_ENV = new Set(['HOME', 'PATH', 'TMPDIR']);

/** The shortest value that is cut. */
export const MIN_SECRET_LENGTH = 4;

/** What stands in for a secret. */
export const REDACTED = '[redacted]';

/** Every secret value a resolved server carries, longest first (a value that contains another is cut whole). */
export function secretValues(server: ResolvedServer): string[] {
  const out: string[] = [];
  if (server.type === 'stdio') {
    for (const [k, v] of Object.entries(server.env)) if (!DAEMON_ENV.has(k)) out.push(v);
  } else {
    for (const v of Object.values(server.headers)) {
      out.push(v);
      // `Bearer <token>`: the token alone may be echoed back.
      const m = /^\s*bearer\s+(.+)$/i.exec(v);
      if (m) out.push(m[1]!.trim());
    }
    const o = server.auth?.oauth;
    for (const v of [o?.clientSecret, o?.privateKey, o?.assertion, o?.idp?.idToken]) if (v) out.push(v);
  }
  return [...new Set(out.filter((v) => v.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
}

/**
 * Each secret as it may appear in text: as given, JSON-escaped (a server
 * that prints its config as JSON, a quote or backslash in the value) and
 * with its white space folded (an excerpt folds it).
 */
function formsOf(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    out.add(s);
    out.add(JSON.stringify(s).slice(1, -1));
    out.add(s.replace(/\s+/g, ' '));
  }
  return [...out].filter((f) => f.length >= MIN_SECRET_LENGTH);
}

/** Where the forms occur in `text`, overlaps included, as sorted disjoint [start, end) spans. */
function spansOf(text: string, forms: readonly string[]): [number, number][] {
  const found: [number, number][] = [];
  for (const f of forms) {
    for (let i = text.indexOf(f); i >= 0; i = text.indexOf(f, i + 1)) found.push([i, i + f.length]);
  }
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

/** `text` with every occurrence of each secret replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  const forms = formsOf(secrets);
  if (!forms.length || !text) return text;
  return render(text, spansOf(text, forms), 0, text.length);
}

/**
 * How many characters to drop at a cut edge of `text`: the longest part
 * ending at its end that begins a form (`end`), or beginning at its start
 * that ends one (`start`). A whole form is a span already; only fragments count.
 */
function fragment(text: string, forms: readonly string[], edge: 'start' | 'end'): number {
  let most = 0;
  for (const f of forms) {
    for (let k = Math.min(f.length - 1, text.length); k > most; k--) {
      // The cheap test first: the fragment's first character (at an end) or its last (at a start).
      const hint = edge === 'end' ? text.charCodeAt(text.length - k) === f.charCodeAt(0) : text.charCodeAt(k - 1) === f.charCodeAt(f.length - 1);
      if (hint && (edge === 'end' ? text.endsWith(f.slice(0, k)) : text.startsWith(f.slice(f.length - k)))) { most = k; break; }
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
 * the part that can be kept is searched: `max` plus the longest secret's
 * length, the rest counting as cut.
 */
export function redactThenCut(text: string, secrets: readonly string[], o: CutOptions): string {
  const forms = formsOf(secrets);
  const head = o.keep === 'head';
  const window = o.max + forms.reduce((n, f) => Math.max(n, f.length), 0);
  let cut = o.cut ?? false;
  if (text.length > window) {
    cut = true;
    text = head ? text.slice(0, window) : text.slice(text.length - window);
  }
  const spans = spansOf(text, forms);
  // From the kept end, take plain characters and whole [redacted]s while they fit.
  let room = o.max;
  let at = head ? 0 : text.length;
  for (const [s, e] of head ? spans : [...spans].reverse()) {
    const plain = head ? s - at : at - e;
    if (plain >= room) break;
    room -= plain;
    at = head ? s : e;
    if (REDACTED.length > room) { room = 0; break; }
    room -= REDACTED.length;
    at = head ? e : s;
  }
  at = head ? Math.min(text.length, at + room) : Math.max(0, at - room);
  let from = 0;
  let to = text.length;
  if (head) {
    if (at < to) { cut = true; to = at; }
    if (cut) to -= fragment(text.slice(0, to), forms, 'end');
  } else {
    if (at > from) { cut = true; from = at; }
    if (cut) from += fragment(text.slice(from), forms, 'start');
  }
  return render(text, spans, from, to);
}
