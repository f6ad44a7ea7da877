/**
 * What a command prints: with `--json`, exactly one JSON value on stdout;
 * otherwise lines for a person (columns padded, nothing a script should
 * parse). News and errors go to stderr, never stdout.
 *
 * Text a server or a config file chose (names, descriptions, error
 * messages, a tool's result) reaches a person's terminal only through
 * safe(): a control character in it (an escape sequence that would move the
 * cursor, rewrite the title, hide what follows) is shown as `\xHH`, not
 * obeyed. JSON output stays exact JSON, its control characters escaped
 * the JSON way (toJson).
 */

import { INVISIBLE, spelled } from '../../web/shared/shown.js';

// C0, DEL, C1, and the invisible and reordering characters of web/shared/shown.js (bidi controls, which reorder what follows
// them — a server's `…$ \u202Egnp.exe` must not read as something else —, zero-width and tag characters, which hide text).
const CONTROL = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}]`, 'gu');
const CONTROL_BUT_LINES = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${INVISIBLE}]`, 'gu');

/**
 * `s` with every C0 and C1 control character and DEL shown as `\xHH`, and
 * every invisible or reordering one (web/shared/shown.js) as `\uHHHH`, or
 * `\u{HHHHH}` beyond the basic plane;
 * `lines`: line feeds and tabs are kept (a multi-line text meant as such).
 */
export function safe(s: string, lines = false): string {
  return s.replace(lines ? CONTROL_BUT_LINES : CONTROL, spelled);
}

// What toJson writes as \uXXXX beyond JSON.stringify's own: DEL, C1 and the invisible and reordering characters.
const JSON_EXTRA = new RegExp(`[\\u007f-\\u009f${INVISIBLE}]`, 'gu');
const u4 = (n: number): string => `\\u${n.toString(16).padStart(4, '0')}`;

/**
 * `value` as JSON, with DEL, the C1 controls and the invisible and
 * reordering characters written as `\uXXXX` too (JSON.stringify escapes
 * only the C0 ones; a tag character as its two surrogates): the same JSON
 * value, and nothing in it a terminal would obey or hide. `space`: as
 * JSON.stringify's (0: one line).
 */
export function toJson(value: unknown, space = 2): string {
  return JSON.stringify(value, null, space).replace(JSON_EXTRA, (c) =>
    [...Array(c.length).keys()].map((i) => u4(c.charCodeAt(i))).join(''),
  );
}

/** Writes `value` as one JSON document (`json`), or the human text. */
export function emit(json: boolean, value: unknown, human: () => string): void {
  if (json) process.stdout.write(toJson(value) + '\n');
  else {
    const text = human();
    if (text) process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  }
}

/** One line of news on stderr (its text already made safe where it holds server data). */
export function note(line: string): void {
  process.stderr.write(line + '\n');
}

/**
 * Rows as padded columns (the last column is not padded); every cell made
 * safe and kept on its line. With `width` (a terminal's), the last column is
 * cut, marked `…`, so that a row fits it.
 */
export function table(header: string[], rows: string[][], width?: number): string {
  const all = [header, ...rows].map((r) => r.map((c) => safe(c)));
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const lead = widths.slice(0, -1).reduce((n, w) => n + w + 2, 0);
  const room = width === undefined ? Infinity : Math.max(12, width - lead);
  const last = (c: string): string => (c.length > room ? `${c.slice(0, room - 1)}…` : c);
  return all
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? last(c) : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The terminal's width when stdout is one (a table's last column is cut to it), else undefined. */
export function terminalWidth(): number | undefined {
  return process.stdout.isTTY && process.stdout.columns > 0 ? process.stdout.columns : undefined;
}

/** A short, single-line, safe rendering of a value for a table cell. */
export function cell(s: string, max = 60): string {
  const one = safe(s.replace(/\s+/g, ' '));
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
