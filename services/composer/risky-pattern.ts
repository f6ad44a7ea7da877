/**
 * Whether a schema's `pattern` could take too long to run (check-args.ts
 * runs a server's patterns on the daemon's own thread, on text the model
 * wrote): a back-reference; a repeated group whose content varies in length
 * (`(a+)+`, `(a|aa)*`, `(a?){25}`: exponential); two unbounded repeats that
 * could share the same characters (`a*a*a*$`, `\w+\s?\w+!`: polynomial of
 * their number's degree); or optional parts whose combinations multiply
 * past a few thousand (`a?a?a?…a?`). Conservative: some safe patterns are
 * called risky (their schema is then not checked: the server still checks
 * it), never the other way round. A pattern of one unbounded repeat takes at
 * worst time quadratic in the text (check-args.ts bounds the text).
 * Pure; the scan is linear in the pattern.
 */

type Category = 'digit' | 'word' | 'space';

/** The characters an atom matches, as far as this scan can tell. */
type Chars = { kind: 'any' } | { kind: 'set'; chars: Set<string>; cats: Set<Category> } | { kind: 'not'; chars: Set<string> };

const ANY: Chars = { kind: 'any' };
/** A repeat whose range is wider than this counts as unbounded. */
const WIDE = 16;
/** The most combinations of optional parts beside one unbounded repeat, and without one. */
const MAX_CHOICES_WITH_UNBOUNDED = 16;
const MAX_CHOICES = 4_096;
/** A longer pattern, or one with more unbounded repeats than this, is called risky without looking further. */
const MAX_PATTERN = 4_096;
const MAX_UNBOUNDED = 32;

const CATEGORY: Record<string, Category> = { d: 'digit', w: 'word', s: 'space' };
const TESTS: Record<Category, RegExp> = { digit: /\d/, word: /\w/, space: /\s/ };
const CONTROL: Record<string, string> = { t: '\t', n: '\n', r: '\r', f: '\f', v: '\v', 0: '\0' };

const set = (chars: string[] = [], cats: Category[] = []): Chars => ({ kind: 'set', chars: new Set(chars), cats: new Set(cats) });

/** What the escape at `p[i]` (the character after `\`) matches, and where it ends. */
function escapeAt(p: string, i: number): { chars: Chars; end: number } {
  const c = p[i] ?? '';
  if (CATEGORY[c]) return { chars: set([], [CATEGORY[c]!]), end: i + 1 };
  if (CONTROL[c] !== undefined) return { chars: set([CONTROL[c]!]), end: i + 1 };
  // \p{…}, \u{…}: the braces belong to the escape.
  if ((c === 'p' || c === 'P' || c === 'u') && p[i + 1] === '{') {
    const close = p.indexOf('}', i);
    return { chars: ANY, end: close < 0 ? p.length : close + 1 };
  }
  if (/[A-Za-z0-9]/.test(c)) return { chars: ANY, end: i + 1 };
  return { chars: set([c]), end: i + 1 };
}

/** The class at `p[i] === '['`: what it matches, and where it ends. */
function classAt(p: string, i: number): { chars: Chars; end: number } {
  let j = i + 1;
  const negated = p[j] === '^';
  if (negated) j++;
  const chars: string[] = [];
  const cats: Category[] = [];
  let wide = false;
  let first = true;
  for (; j < p.length && (p[j] !== ']' || first); j++) {
    first = false;
    let c = p[j]!;
    if (c === '\\') {
      const e = escapeAt(p, j + 1);
      j = e.end - 1;
      if (e.chars.kind !== 'set') {
        wide = true;
        continue;
      }
      cats.push(...e.chars.cats);
      if (e.chars.chars.size !== 1) continue;
      c = [...e.chars.chars][0]!;
    }
    // A range: its characters, when there are few enough to list.
    if (p[j + 1] === '-' && p[j + 2] !== undefined && p[j + 2] !== ']' && p[j + 2] !== '\\') {
      const from = c.codePointAt(0)!;
      const to = p.codePointAt(j + 2)!;
      j += 2;
      if (to - from > 512) wide = true;
      else for (let x = from; x <= to; x++) chars.push(String.fromCodePoint(x));
      continue;
    }
    chars.push(c);
  }
  const end = j + 1;
  if (wide) return { chars: ANY, end };
  if (negated) return { chars: cats.length ? ANY : { kind: 'not', chars: new Set(chars) }, end };
  return { chars: set(chars, cats), end };
}

const matchedBy = (c: string, s: Extract<Chars, { kind: 'set' }>): boolean => s.chars.has(c) || [...s.cats].some((k) => TESTS[k].test(c));

/** Whether no character is matched by both `a` and `b`. */
export function disjoint(a: Chars, b: Chars): boolean {
  if (a.kind === 'any' || b.kind === 'any') return false;
  if (a.kind === 'not' && b.kind === 'not') return false;
  if (a.kind === 'not' || b.kind === 'not') {
    const [neg, pos] = (a.kind === 'not' ? [a, b] : [b, a]) as [Extract<Chars, { kind: 'not' }>, Extract<Chars, { kind: 'set' }>];
    return pos.cats.size === 0 && [...pos.chars].every((c) => neg.chars.has(c));
  }
  for (const c of a.chars) if (matchedBy(c, b)) return false;
  for (const c of b.chars) if (matchedBy(c, a)) return false;
  for (const x of a.cats) for (const y of b.cats) if (!((x === 'space') !== (y === 'space'))) return false;
  return true;
}

/** The quantifier at `p[i]`: its range and where it ends (a lazy `?` included); undefined when there is none. */
function quantifierAt(p: string, i: number): { min: number; max: number; end: number } | undefined {
  const c = p[i];
  let q: { min: number; max: number; end: number } | undefined;
  if (c === '*') q = { min: 0, max: Infinity, end: i + 1 };
  else if (c === '+') q = { min: 1, max: Infinity, end: i + 1 };
  else if (c === '?') q = { min: 0, max: 1, end: i + 1 };
  else if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(p.slice(i, i + 24));
    if (m) q = { min: Number(m[1]), max: m[2] === undefined ? Number(m[1]) : m[3] ? Number(m[3]) : Infinity, end: i + m[0].length };
  }
  if (q && p[q.end] === '?') q.end++;
  return q;
}

/** An open group: whether its content varies in length, and whether it holds an unbounded repeat. */
interface Group {
  varies: boolean;
  unbounded: boolean;
}

/** See the file's comment. */
export function riskyPattern(p: string): boolean {
  if (p.length > MAX_PATTERN || /\\[1-9]|\\k</.test(p)) return true;
  const groups: Group[] = [];
  // Unbounded repeats since the last barrier: a mandatory atom none of them matches, which none of them can cross.
  let open: Chars[] = [];
  let unbounded = 0;
  let choices = 1;
  const alternated = topLevelAlternation(p);
  const top = (): Group | undefined => groups[groups.length - 1];
  for (let i = 0; i < p.length;) {
    const c = p[i]!;
    let atom: Chars;
    let next = i + 1;
    let group: Group | undefined;
    if (c === '(') {
      groups.push({ varies: false, unbounded: false });
      // (?:…) (?=…) (?!…) (?<=…) (?<!…) (?<name>…): the prefix is not a quantifier.
      if (p[i + 1] === '?')
        next =
          p[i + 2] === '<' && p[i + 3] !== '=' && p[i + 3] !== '!'
            ? Math.max(p.indexOf('>', i) + 1, i + 3)
            : i + (p[i + 2] === '<' ? 4 : 3);
      i = next;
      continue;
    }
    if (c === '|' || c === '^' || c === '$') {
      if (c === '|' && top()) top()!.varies = true;
      i = next;
      continue;
    }
    if (c === ')') {
      group = groups.pop() ?? { varies: false, unbounded: false };
      atom = ANY;
    } else if (c === '[') {
      ({ chars: atom, end: next } = classAt(p, i));
    } else if (c === '\\') {
      if (p[i + 1] === 'b' || p[i + 1] === 'B') {
        i += 2;
        continue;
      }
      ({ chars: atom, end: next } = escapeAt(p, i + 1));
    } else {
      atom = c === '.' ? ANY : set([c]);
    }
    const q = quantifierAt(p, next) ?? { min: 1, max: 1, end: next };
    next = q.end;
    const varies = q.max !== q.min;
    const wide = q.max - q.min > WIDE;
    if (group && q.max > 1) {
      // A group repeated: exponential when what it holds varies and the repeat is wide; else its combinations multiply.
      if (group.unbounded || (group.varies && wide)) return true;
      if (group.varies) choices *= 2 ** Math.min(q.max, 31);
    }
    const parent = top();
    if (parent) {
      parent.varies ||= varies || !!group?.varies;
      parent.unbounded ||= wide || !!group?.unbounded;
    }
    if (wide) {
      if (++unbounded > MAX_UNBOUNDED || open.some((o) => !disjoint(o, atom))) return true;
    } else if (varies) {
      choices *= q.max - q.min + 1;
    }
    // A mandatory atom outside every group that none of the open repeats matches: they end before it.
    if (q.min >= 1 && !groups.length && !alternated && !group && open.every((o) => disjoint(o, atom))) open = [];
    if (wide) open.push(atom);
    if (choices > (unbounded ? MAX_CHOICES_WITH_UNBOUNDED : MAX_CHOICES)) return true;
    i = next;
  }
  return false;
}

/** Whether `p` has a `|` outside every group and class (then no atom is mandatory). */
function topLevelAlternation(p: string): boolean {
  let depth = 0;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') i++;
    else if (c === '[') i = classAt(p, i).end - 1;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth <= 0) return true;
  }
  return false;
}
