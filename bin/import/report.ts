/**
 * What `albedo mcp import` prints: one JSON object (`--json`), or for a
 * person a table of the servers in the file's order with, under a server
 * skipped or failed, why — in full, on lines of its own (wrapped to the
 * terminal's width; a pipe gets each line whole), never cut to fit a cell:
 * a failed save's reason holds the server's last stderr lines.
 */
import { forPerson, oneLine } from '../client/errors.ts';
import { cell, safe, table } from '../client/output.ts';
import { target } from '../client/show.ts';
import { runsIn, secretNames, type Planned } from './plan.ts';

export type Outcome = 'would_add' | 'added' | 'failed' | 'skipped';

export interface Row {
  plan: Planned;
  outcome: Outcome;
  reason?: string;
  message?: string;
  check?: unknown;
  error?: { code: string; message: string; path?: Array<string | number> };
}

export function json(r: Row): Record<string, unknown> {
  const p = r.plan;
  const out: Record<string, unknown> = { name: p.name, outcome: r.outcome, type: p.kind, entry: p.entry, secrets: secretNames(p) };
  if (p.inputs.length) out.inputs = [...new Set(p.inputs.map((i) => i.id))];
  out.warnings = p.warnings;
  if (r.reason) out.reason = r.reason;
  if (r.message) out.message = r.message;
  if (r.check) out.check = r.check;
  if (r.error) out.error = r.error;
  return out;
}

/** How far a reason is indented under its row. */
const INDENT = '    ';

/** `text` in lines of at most `width` characters, broken at spaces where it can be (a longer word is split). */
export function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    let w = word;
    while (w.length > width) {
      if (line) out.push(line);
      out.push(w.slice(0, width));
      w = w.slice(width);
      line = '';
    }
    if (!line) line = w;
    else if (line.length + 1 + w.length <= width) line += ` ${w}`;
    else {
      out.push(line);
      line = w;
    }
  }
  if (line || !out.length) out.push(line);
  return out;
}

/**
 * Why a row was skipped or failed: `code: message`, each line of the message its own (made safe), wrapped to `width`.
 * A daemon's message is said as a person reads it (forPerson: the field in the entry's own words, no API path, no
 * protocol method); the lines after its first (a server's last stderr lines) are quoted as they are.
 */
function reasonLines(r: Row, width: number | undefined): string[] {
  const code = r.reason ?? r.error?.code ?? '';
  const [head = '', ...rest] = (r.message ?? r.error?.message ?? '').split(/\r?\n/);
  const first = !r.message && r.error ? forPerson(head, r.error.path, r.error.code, false) : head;
  const lines = [`${code}: ${first}`, ...rest].map((l) => safe(l.trimEnd())).filter((l) => l.trim());
  const room = width ? Math.max(20, width - INDENT.length) : Infinity;
  return lines.flatMap((l) => (room === Infinity ? [l] : wrap(l, room))).map((l) => INDENT + l);
}

/** The person's report; `width`: the terminal's columns (none on a pipe: reasons are not wrapped). */
export function human(rows: Row[], header: string, yes: boolean, width?: number): string {
  const words: Record<Outcome, string> = { would_add: 'add', added: 'added', failed: 'FAILED', skipped: 'skip' };
  const lines = table(
    ['', 'NAME', 'TYPE', 'TARGET', 'RUNS IN', 'SECRETS'],
    rows.map((r) => [
      words[r.outcome],
      r.plan.name,
      r.plan.kind ?? '-',
      r.plan.entry ? cell(target(r.plan.entry), 50) : '',
      cell(runsIn(r.plan), 40),
      secretNames(r.plan).join(', '),
    ]),
  ).split('\n');
  const out = [safe(header), lines[0]!];
  rows.forEach((r, i) => {
    out.push(lines[i + 1]!);
    if (r.outcome === 'skipped' || r.outcome === 'failed') out.push(...reasonLines(r, width));
  });
  for (const r of rows) for (const w of r.plan.warnings) out.push(safe(`note: ${r.plan.name}: ${oneLine(w)}`));
  const adding = rows.filter((r) => r.outcome === 'would_add').length;
  if (!yes) out.push(adding ? `nothing changed; run again with --yes to add ${adding} server(s)` : 'nothing to add');
  return out.join('\n');
}
