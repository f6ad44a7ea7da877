/**
 * What a command prints: with `--json`, exactly one JSON value on stdout;
 * otherwise lines for a person (columns padded, nothing a script should
 * parse). News and errors go to stderr, never stdout.
 */

/** Writes `value` as one JSON document (`json`), or the human text. */
export function emit(json: boolean, value: unknown, human: () => string): void {
  if (json) process.stdout.write(JSON.stringify(value, null, 2) + '\n');
  else {
    const text = human();
    if (text) process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  }
}

/** One line of news on stderr. */
export function note(line: string): void {
  process.stderr.write(line + '\n');
}

/** Rows as padded columns (the last column is not padded). */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** A short, single-line rendering of a value for a table cell. */
export function cell(s: string, max = 60): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
