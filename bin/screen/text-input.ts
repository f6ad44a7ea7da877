/**
 * One line of editable text, as the screen's fields and the sign-in's paste
 * box hold it: the text and a cursor, edited by the keys a terminal line
 * editor has (readline's, a few of them). Pure: no Ink, no React — the
 * components render what `view` returns.
 *
 * A terminal may deliver several keys in one read (a fast typist, a paste
 * without bracketed paste mode, or a test writing "abc\r"): Ink then hands
 * the whole string to `useInput` as one input. `splitKeys` cuts such a
 * string back into the keys it holds, so "kk" is two presses of k and an
 * enter, a tab or a ctrl+s inside it still acts as one.
 */

/** What the screen reads from one Ink input event (Ink's Key, the fields it uses). */
export interface KeyInfo {
  upArrow: boolean;
  downArrow: boolean;
  leftArrow: boolean;
  rightArrow: boolean;
  home: boolean;
  end: boolean;
  return: boolean;
  escape: boolean;
  ctrl: boolean;
  shift: boolean;
  tab: boolean;
  backspace: boolean;
  delete: boolean;
  meta: boolean;
}

/** One key: the text it types (empty for a named key) and what it is. */
export interface KeyPress {
  input: string;
  key: KeyInfo;
}

export interface TextState {
  text: string;
  /** 0…text.length: the index the next character is inserted at. */
  cursor: number;
}

const NO_KEY: KeyInfo = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
};

/** A KeyInfo with the given flags set, the rest false. */
export const keyOf = (flags: Partial<KeyInfo> = {}): KeyInfo => ({ ...NO_KEY, ...flags });

/**
 * The keys in one input event: a plain key as it is; a string of several
 * characters, one key per character — a carriage return or line feed is an
 * enter, a tab a tab, another control character (`\x01`–`\x1a`) the
 * ctrl+letter it is (`\x13` ctrl+s).
 */
export function splitKeys(input: string, key: KeyInfo): KeyPress[] {
  const chars = [...input];
  if (chars.length <= 1) return [{ input, key }];
  return chars.map((c): KeyPress => {
    if (c === '\r' || c === '\n') return { input: '', key: keyOf({ return: true }) };
    if (c === '\t') return { input: '', key: keyOf({ tab: true }) };
    if (c === '\b') return { input: '', key: keyOf({ backspace: true }) };
    if (c >= '\u0001' && c <= '\u001a') return { input: String.fromCharCode(c.charCodeAt(0) + 96), key: keyOf({ ctrl: true }) };
    return { input: c, key: keyOf({ shift: /[A-Z]/.test(c) }) };
  });
}

/** A text field at `text`, the cursor at its end. */
export const textAt = (text = ''): TextState => ({ text, cursor: text.length });

/** `input` without control characters (a paste's line breaks, a stray escape): what a one-line field may hold. */
export const printable = (input: string): string => input.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');

/**
 * The field after one key, or null when the key does not edit text (the
 * caller handles it: enter, tab, ↑/↓, esc, ctrl+s…). Characters are
 * inserted at the cursor; backspace and delete remove before and at it;
 * ←/→ move it, home/end and ctrl+a/ctrl+e go to the ends.
 */
export function editText(s: TextState, input: string, key: KeyInfo): TextState | null {
  if (key.backspace) {
    if (s.cursor === 0) return s;
    return { text: s.text.slice(0, s.cursor - 1) + s.text.slice(s.cursor), cursor: s.cursor - 1 };
  }
  if (key.delete) return { text: s.text.slice(0, s.cursor) + s.text.slice(s.cursor + 1), cursor: s.cursor };
  if (key.leftArrow) return { ...s, cursor: Math.max(0, s.cursor - 1) };
  if (key.rightArrow) return { ...s, cursor: Math.min(s.text.length, s.cursor + 1) };
  if (key.home || (key.ctrl && input === 'a')) return { ...s, cursor: 0 };
  if (key.end || (key.ctrl && input === 'e')) return { ...s, cursor: s.text.length };
  if (key.ctrl || key.meta || key.return || key.tab || key.escape || key.upArrow || key.downArrow) return null;
  const typed = printable(input);
  if (!typed) return null;
  return { text: s.text.slice(0, s.cursor) + typed + s.text.slice(s.cursor), cursor: s.cursor + typed.length };
}

/** What a field shows: the text around the cursor, cut to fit, with `…` where text is hidden. */
export interface TextView {
  before: string;
  /** The character under the cursor (a space at the end of the text). */
  at: string;
  after: string;
}

/**
 * The part of `shown` (the text as displayed: masked for a secret, one
 * character per character of the text) that fits in `width` columns with
 * the cursor visible: a long URL scrolls sideways rather than wrapping.
 */
export function view(shown: string, cursor: number, width: number): TextView {
  const w = Math.max(4, width);
  const chars = [...shown];
  const c = Math.min(cursor, chars.length);
  // The window [start, start + w): the cursor cell included, as much text before it as fits.
  let start = 0;
  if (chars.length + 1 > w) start = Math.max(0, Math.min(c - Math.floor(w * 0.7), chars.length + 1 - w));
  if (c - start >= w) start = c - w + 1;
  const end = start + w;
  const cut = (a: number, b: number): string => chars.slice(a, b).join('');
  let before = cut(start, c);
  const at = c < chars.length ? chars[c]! : ' ';
  let after = cut(c + 1, end);
  if (start > 0 && before.length) before = `…${before.slice(1)}`;
  if (end < chars.length && after.length) after = `${after.slice(0, -1)}…`;
  return { before, at, after };
}
