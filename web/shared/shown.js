// Characters that must be shown spelled out, not obeyed or hidden, wherever
// a server's text reaches a person: the CLI (bin/client/output.ts), the
// terminal screen (through the CLI's safe()) and the web pane
// (web/app/ui.js). One set, so the three never disagree.
// Plain JavaScript with JSDoc types: the browser loads it as it is (no build
// step) and the CLI imports it. It imports nothing and touches nothing.

/**
 * The invisible and reordering characters, as the inside of a character
 * class for a `u` regular expression: the bidirectional controls (U+061C,
 * U+200E–F, U+202A–E, U+2066–9), which reorder what follows them; the line
 * and paragraph separators (U+2028–9); the zero-width space (U+200B), word
 * joiner and invisible operators (U+2060–4) and the byte-order mark
 * (U+FEFF), which hide text or split a word unseen; the tag characters
 * (U+E0000–E007F), invisible letters that can carry a whole hidden
 * message. The zero-width non-joiner and joiner (U+200C–D) are kept: emoji
 * sequences and several scripts need them.
 */
export const INVISIBLE =
  '\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff\\u{e0000}-\\u{e007f}';

/**
 * How one such character (or a control character) is shown: `\xHH` up to
 * U+00FF, `\uHHHH` in the basic plane, `\u{HHHHH}` beyond it.
 * @param {string} c @returns {string}
 */
export function spelled(c) {
  const n = /** @type {number} */ (c.codePointAt(0));
  if (n > 0xffff) return `\\u{${n.toString(16)}}`;
  return n > 0xff ? `\\u${n.toString(16).padStart(4, '0')}` : `\\x${n.toString(16).padStart(2, '0')}`;
}
