/**
 * How near a mistyped name is to a known one, for "did you mean …?": the
 * edit distance (optimal string alignment: a swap of two neighbours is one
 * edit) relative to the longer name, made better when the typed words are
 * all in the name or the typed text is part of it. Case is ignored. Names
 * are cut to MAX_COMPARED characters first, so a miss costs
 * O(candidates × MAX_COMPARED²) at worst. Pure functions.
 */

/** Characters of a name that are compared. */
export const MAX_COMPARED = 64;
/** A candidate ranked above this is not suggested (0: equal, 1: nothing in common). */
export const MAX_RANK = 0.5;

/**
 * The optimal-string-alignment distance of `a` and `b`, or `limit + 1` as
 * soon as it is sure to be more than `limit`.
 */
export function distance(a: string, b: string, limit = Infinity): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let cur = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      cur[j] = d;
      if (d < best) best = d;
    }
    if (best > limit) return limit + 1;
    [before, prev, cur] = [prev, cur, before];
  }
  return prev[b.length]!;
}

const words = (s: string): string[] => s.split(/[^a-z0-9]+/).filter((w) => w.length > 1);

/** How near `typed` is to `known`: 0 when equal, up to 1; both compared in lower case, cut to MAX_COMPARED. */
export function rank(typed: string, known: string): number {
  const q = typed.slice(0, MAX_COMPARED).toLowerCase();
  const k = known.slice(0, MAX_COMPARED).toLowerCase();
  if (q === k) return 0;
  const longer = Math.max(q.length, k.length);
  const limit = Math.floor(longer * MAX_RANK);
  let r = distance(q, k, limit) / longer;
  // "sum" for get-sum, "everything echo" for everything/echo: the words typed are all in the name.
  const typedWords = words(q);
  const knownWords = new Set(words(k));
  if (q.length >= 3 && k.includes(q)) r = Math.min(r, 0.3);
  else if (typedWords.length && typedWords.every((w) => knownWords.has(w))) r = Math.min(r, 0.35);
  return Math.min(r, 1);
}

/**
 * The `max` candidates nearest to what was typed, nearest first (ties in
 * the given order), by `rankOf` (e.g. `rank(typed, name)`): those ranked
 * past MAX_RANK are left out, and so are those much further than the
 * nearest (an exact match is not followed by mere neighbours).
 */
export function nearest<T>(candidates: Iterable<T>, rankOf: (c: T) => number, max = 3): T[] {
  const ranked: Array<{ c: T; r: number; i: number }> = [];
  let i = 0;
  for (const c of candidates) {
    const r = rankOf(c);
    if (r <= MAX_RANK) ranked.push({ c, r, i });
    i++;
  }
  ranked.sort((a, b) => a.r - b.r || a.i - b.i);
  const cut = ranked.length ? 2 * ranked[0]!.r + 0.1 : 0;
  return ranked
    .filter((x) => x.r <= cut)
    .slice(0, max)
    .map((x) => x.c);
}
