/**
 * A configured server in the columns and words every list of servers shows
 * (`albedo mcp list`, `albedo status`, the `/mcp` screen, the web pane):
 * NAME · TYPE · STATE · TOOLS · SIGN-IN · PROBLEM, the labels of
 * web/shared/labels.js, `—` for an empty cell. PROBLEM is the reason, on one
 * line (cut to the terminal), the full text being in `--json` and `albedo
 * mcp show`.
 */
import { authLabel, EMPTY, problemText, savedStateLabel, transportOf } from '../../web/shared/labels.js';
import { forPerson } from './errors.ts';
import { cell, table, terminalWidth } from './output.ts';

/** A `Server` of `GET /v1/mcp/servers`, as far as a row reads it. */
export interface ServerLike {
  name: string;
  config: Record<string, unknown>;
  state?: string | null;
  tools: number | null;
  auth?: { state: string; account?: string } | null;
  lastError?: { code: string; message: string; path?: Array<string | number> } | null;
}

export const COLUMNS = ['NAME', 'TYPE', 'STATE', 'TOOLS', 'SIGN-IN', 'PROBLEM'] as const;

/** Why the server cannot start as saved, as a person reads it (its name, which the row shows, left out); EMPTY when nothing is wrong. */
export function problemOf(s: ServerLike): string {
  if (!s.lastError) return EMPTY;
  return forPerson(
    problemText({ name: s.name, lastError: s.lastError }),
    s.lastError.path && ['body', ...s.lastError.path],
    s.lastError.code,
    false,
  );
}

/** The cells of a row, in COLUMNS order. */
export function rowOf(s: ServerLike): string[] {
  const transport = transportOf(s.config);
  return [
    s.name,
    transport,
    savedStateLabel(s.state).text,
    s.tools === null ? EMPTY : String(s.tools),
    authLabel(s.auth, transport).text,
    cell(problemOf(s), 200),
  ];
}

/** A column `albedo mcp list` adds before PROBLEM: its header, and its cell of a server cut to `max` characters. */
export interface Extra {
  header: string;
  cell(s: ServerLike, max: number): string;
}

/**
 * The servers as a table: COLUMNS, an `extra` column before PROBLEM (at
 * most 50 characters, and half of what the others leave of a terminal), the
 * last column cut to the terminal.
 */
export function serversTable(servers: ServerLike[], extra?: Extra): string {
  const width = terminalWidth();
  const rows = servers.map((s) => rowOf(s));
  let max = 50;
  if (width !== undefined) {
    const lead = COLUMNS.slice(0, -1).reduce((n, h, i) => n + Math.max(h.length, ...rows.map((r) => r[i]!.length)) + 2, 0);
    max = Math.max(16, Math.min(max, Math.floor((width - lead) / 2) - 2));
  }
  const header = [...COLUMNS.slice(0, -1), ...(extra ? [extra.header] : []), 'PROBLEM'];
  const cells = rows.map((r, i) => (extra ? [...r.slice(0, -1), extra.cell(servers[i]!, max), r.at(-1)!] : r));
  return table(header, cells, width);
}
