/**
 * The `/mcp` screen's list of configured servers and its keys: the columns
 * and words every list of servers shows (`albedo mcp list`, `albedo
 * status`, the web pane): NAME · TYPE · STATE · TOOLS · SIGN-IN · PROBLEM,
 * the labels of web/shared/labels.js (colour and symbol added), `—` for an
 * empty cell; the selected one's details and what stops it, and the
 * actions on it — `n` new, enter edit, `t` its tools (from the saved
 * catalogue: no session), `d` delete (after a y/n confirmation), `e` switch
 * on (tried first), `x` switch off, ctrl+l sign in, ctrl+u sign out, `g` the
 * gateways (gateways.ts), `a` the ACP sessions (acp.ts), `X` the extensions
 * (extensions.ts), `q` quit.
 */
import React from 'react';
import { Box, Text } from 'ink';
import { authLabel, EMPTY, NO_AUTH, savedStateLabel, transportOf } from '../../web/shared/labels.js';
import { cell, safe } from '../client/output.ts';
import { problemOf as problemCell } from '../client/server-rows.ts';
import { problemOf, type Problem, type ScreenApi, type Server } from './api.ts';
import { col, last } from './cells.ts';
import { editForm, newForm, type FormState } from './form-state.ts';
import { firstLine, hasMore } from './tool-text.ts';
import { COLOR, ctrl, h, Lines, resultStatus, Spinner, StatusLine, useKeys, useLatest, wrapLines, type Status } from './ui.ts';

export interface ListProps {
  api: ScreenApi;
  servers: Server[] | null;
  broken: boolean;
  loadError: Problem | null;
  selected: number;
  /** The selection as the keys before this one left it (several keys can arrive in one read: "jd" deletes the next one). */
  selectedNow(): number;
  /** Moves the selection up (-1) or down (+1). */
  move(by: 1 | -1): void;
  status: Status | null;
  setStatus(s: Status | null): void;
  refresh(): Promise<void>;
  width: number;
  height: number;
  openForm(form: FormState): void;
  openSignIn(name: string): void;
  /** Opens the tools view of a server (its saved catalogue). */
  openTools(name: string): void;
  /** Opens the gateways view (read only). */
  openGateways(): void;
  /** Opens the ACP sessions view (read only). */
  openAcp(): void;
  /** Opens the extensions view (every session's defaults, or one session's). */
  openExtensions(): void;
  quit(): void;
}

/** What a server runs or reaches, in a few words (never a secret: config holds only variable names). */
export function target(s: Server): string {
  if (transportOf(s.config) === 'http') return String(s.config.url);
  return [s.config.command, ...(s.config.args ?? [])]
    .map((w: unknown) => (/[\s'"\\]/.test(String(w)) ? JSON.stringify(w) : String(w)))
    .join(' ');
}

/** Why a server does not sign in, or null when it can (an http server without a fixed Authorization). */
function noSignIn(s: Server): string | null {
  if (transportOf(s.config) === 'stdio') return `${s.name} is a command (stdio) server: it does not sign in`;
  if (!s.auth) return `${s.name} sends fixed credentials (a bearer token or an Authorization header): it does not sign in`;
  return null;
}

/** The columns' widths: the longest transport, state label ("✗ cannot start as saved") and tool count. */
const TYPE_W = 5;
const STATE_W = 23;
const TOOLS_W = 5;
/** PROBLEM keeps at least this many columns while NAME and SIGN-IN can give some up. */
const MIN_PROBLEM = 16;

export interface ColumnWidths {
  name: number;
  state: number;
  signIn: number;
}

/**
 * The widths of NAME, STATE and SIGN-IN in a list `inner` columns wide, for names and sign-in cells of at most
 * `longestName` and `longestSignIn` characters (every server's, so the columns do not move while scrolling). TYPE
 * and TOOLS are fixed; NAME and SIGN-IN are as wide as their longest, within bounds; PROBLEM takes the rest. When
 * that leaves PROBLEM fewer than MIN_PROBLEM columns, SIGN-IN and then NAME give some up; in a narrow terminal
 * (down to the screen's 40 columns) PROBLEM goes, then SIGN-IN, STATE and NAME are cut further (marked …), so a
 * server's row never outgrows the terminal: a wrapped row would tear the table.
 */
export function columnWidths(inner: number, longestName: number, longestSignIn: number): ColumnWidths {
  const w = {
    name: Math.min(24, Math.max(4, longestName)),
    state: STATE_W,
    signIn: Math.min(30, Math.max(7, longestSignIn)),
    problem: MIN_PROBLEM,
  };
  // The row: the selection mark (2), each column but the last and the space after it, PROBLEM.
  let over = 2 + (w.name + 1) + (TYPE_W + 1) + (w.state + 1) + (TOOLS_W + 1) + (w.signIn + 1) + w.problem - inner;
  const steps: Array<[keyof typeof w, number]> = [
    ['signIn', 12],
    ['name', 10],
    ['problem', 0],
    ['signIn', 3],
    ['state', 12],
    ['name', 6],
    ['state', 2],
  ];
  for (const [key, floor] of steps) {
    if (over <= 0) break;
    const cut = Math.min(over, Math.max(0, w[key] - floor));
    w[key] -= cut;
    over -= cut;
  }
  return { name: w.name, state: w.state, signIn: w.signIn };
}

/** The SIGN-IN cell: the label with its symbol, or the empty mark alone. */
function signIn(s: Server): string {
  const au = authLabel(s.auth, transportOf(s.config));
  return au === NO_AUTH ? au.text : `${au.symbol} ${safe(au.text)}`;
}

const fail = (what: string, err: unknown): Status => {
  const p = problemOf(err);
  return { tone: 'error', text: `${what}: ${p.code}: ${p.message}` };
};

export function List(p: ListProps): React.ReactElement {
  const [confirm, setConfirm, confirmNow] = useLatest<string | null>(null);
  const [busy, setBusy, busyNow] = useLatest<string | null>(null);
  const servers = p.servers ?? [];
  const selected: Server | undefined = servers[p.selected];

  /** Runs one action on the server with a spinner; the list is read again after it, whatever happened. */
  const act = (spinner: string, failed: string, run: () => Promise<Status | null>): void => {
    setBusy(spinner);
    p.setStatus(null);
    run()
      .then(
        (s) => s,
        (err: unknown) => fail(failed, err),
      )
      .then(async (s) => {
        await p.refresh();
        setBusy(null);
        if (s) p.setStatus(s);
      });
  };

  useKeys((input, key) => {
    const confirm = confirmNow.current;
    if (busyNow.current || (key.ctrl && input === 'c')) return;
    if (confirm) {
      setConfirm(null);
      if (input === 'y' || input === 'Y') {
        act(`deleting ${confirm}…`, `${confirm} was not deleted`, async () => {
          await p.api.remove(confirm);
          return { tone: 'ok', text: `deleted ${confirm} and its stored credentials` };
        });
      } else p.setStatus({ tone: 'off', text: `kept ${confirm}` });
      return;
    }
    if (input === 'q') return p.quit();
    if (input === 'g') return p.openGateways();
    if (input === 'a') return p.openAcp();
    if (input === 'X') return p.openExtensions();
    // The screen's own directory is the new server's (shown, editable), as `albedo mcp add` saves; a suggested name is never one taken.
    if (input === 'n') return p.openForm(newForm({ cwd: process.cwd(), taken: servers.map((s) => s.name) }));
    if (key.upArrow || input === 'k') return p.move(-1);
    if (key.downArrow || input === 'j') return p.move(1);
    const wanted = key.return || ['d', 'e', 'x', 't'].includes(input) || ctrl(input, key, 'l') || ctrl(input, key, 'u');
    if (!wanted) return;
    const cur: Server | undefined = servers[p.selectedNow()];
    if (!cur) return p.setStatus({ tone: 'off', text: 'no servers yet: press n to add one' });
    const name = cur.name;
    if (key.return) {
      setBusy(`reading ${name}…`);
      p.api.server(name).then(
        ({ server, etag }) => {
          setBusy(null);
          p.openForm(editForm(server, etag));
        },
        (err: unknown) => {
          setBusy(null);
          p.setStatus(fail(`cannot edit ${name}`, err));
        },
      );
    } else if (input === 't') p.openTools(name);
    else if (input === 'd') setConfirm(name);
    else if (input === 'e') {
      if (cur.enabled) return p.setStatus({ tone: 'off', text: `${name} is already on (x switches it off)` });
      act('trying the server…', `${name} stays off`, async () => resultStatus(name, await p.api.toggle(name, true), 'switched on'));
    } else if (input === 'x') {
      if (!cur.enabled) return p.setStatus({ tone: 'off', text: `${name} is already off (e switches it on)` });
      act(`switching ${name} off…`, `${name} was not switched off`, async () => {
        await p.api.toggle(name, false);
        return { tone: 'off', text: `switched ${name} off (e switches it on)` };
      });
    } else if (ctrl(input, key, 'l')) {
      const why = noSignIn(cur);
      if (why) return p.setStatus({ tone: 'off', text: why });
      p.setStatus(null);
      p.openSignIn(name);
    } else if (ctrl(input, key, 'u')) {
      const why = noSignIn(cur);
      if (why) return p.setStatus({ tone: 'off', text: why });
      if (cur.auth?.state === 'signed_out' || cur.auth?.state === 'none')
        return p.setStatus({ tone: 'off', text: `${name} is not signed in` });
      act(`signing out of ${name}…`, `${name} was not signed out`, async () => {
        const r = await p.api.signOut(name);
        const still = r.check.tried && r.check.result === 'needs_sign_in';
        return { tone: 'warn', text: `signed out of ${name}${still ? ': it needs a sign-in (ctrl+l)' : ''}` };
      });
    }
  });

  const inner = Math.max(30, p.width - 2);
  const signs = servers.map((s) => signIn(s));
  const w = columnWidths(inner, Math.max(0, ...servers.map((s) => safe(s.name).length)), Math.max(0, ...signs.map((x) => x.length)));
  // Title, a broken-file line, header, a scroll line, details (4), status (3), footer (2), margins and a spare row: the rest
  // is for servers, the list scrolling around the selection (the screen fits the terminal: Ink redraws a taller one badly).
  const room = Math.max(3, p.height - 18);
  const first = Math.min(Math.max(0, p.selected - room + 1), Math.max(0, servers.length - room));
  const shown = servers.slice(first, first + room);

  const rows = shown.map((s, i) => {
    const sel = first + i === p.selected;
    const transport = transportOf(s.config);
    const st = savedStateLabel(s.state);
    const au = authLabel(s.auth, transport);
    // The reason in the words `albedo mcp list` uses (its server's name, which the row shows, left out).
    const problem = cell(problemCell(s), inner);
    return h(
      Box,
      { key: s.name },
      h(Box, { flexShrink: 0 }, h(Text, { color: COLOR.busy }, sel ? '› ' : '  ')),
      col(w.name, safe(s.name), undefined, sel),
      col(TYPE_W, transport),
      col(w.state, `${st.symbol} ${st.text}`, st.tone),
      col(TOOLS_W, s.tools === null ? EMPTY : String(s.tools)),
      col(w.signIn, signIn(s), au.tone),
      last(problem, s.lastError ? 'error' : 'off'),
    );
  });

  let body: React.ReactElement;
  if (p.servers === null) body = p.loadError ? h(Text, null, ' ') : h(Spinner, { text: 'asking the daemon…' });
  else if (!servers.length) body = h(Text, null, 'No servers configured yet. Press n to add one.');
  else {
    body = h(
      Box,
      { flexDirection: 'column' },
      h(
        Box,
        null,
        h(Box, { flexShrink: 0 }, h(Text, null, '  ')),
        col(w.name, 'NAME', 'off'),
        col(TYPE_W, 'TYPE', 'off'),
        col(w.state, 'STATE', 'off'),
        col(TOOLS_W, 'TOOLS', 'off'),
        col(w.signIn, 'SIGN-IN', 'off'),
        last('PROBLEM', 'off'),
      ),
      ...rows,
      servers.length > room ? h(Text, { dimColor: true }, `  ${first + 1}–${first + shown.length} of ${servers.length}`) : null,
    );
  }

  let bottom: React.ReactElement | null;
  if (busy) bottom = h(Spinner, { text: busy });
  else if (confirm)
    bottom = h(Text, { color: COLOR.warn, bold: true, wrap: 'truncate-end' }, `Delete ${safe(confirm)} and its stored credentials? y/n`);
  else {
    const unread: Status | null = p.loadError
      ? { tone: 'error', text: `cannot read the servers: ${p.loadError.code}: ${p.loadError.message}` }
      : null;
    bottom = h(StatusLine, { status: unread ?? p.status, width: inner });
  }

  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true }, 'MCP servers', h(Text, { dimColor: true }, servers.length ? `  ${servers.length} configured` : '')),
    p.broken
      ? h(Text, { color: COLOR.warn, wrap: 'truncate-end' }, '! extensions.json is broken: the servers shown are the last valid ones')
      : null,
    h(Box, { marginTop: 1, flexDirection: 'column' }, body),
    selected ? h(Box, { marginTop: 1, flexDirection: 'column' }, h(Details, { s: selected, width: inner })) : null,
    h(Box, { marginTop: 1, flexDirection: 'column' }, bottom ?? h(Text, null, ' ')),
    h(
      Box,
      { marginTop: 1, flexDirection: 'column' },
      h(
        Text,
        { dimColor: true, wrap: 'truncate-end' },
        '↑↓/jk select · enter edit · t tools · n new · d delete · e switch on · x switch off',
      ),
      h(Text, { dimColor: true, wrap: 'truncate-end' }, 'ctrl+l sign in · ctrl+u sign out · g gateways · a ACP · X extensions · q quit'),
    ),
  );
}

/** The selected server: what it runs or reaches, and what stops it (in words, with the key that helps). */
function Details({ s, width }: { s: Server; width: number }): React.ReactElement {
  const lines: React.ReactElement[] = [
    h(Text, { key: 't', wrap: 'truncate-end' }, h(Text, { bold: true }, safe(s.name)), `  ${cell(target(s), width)}`),
  ];
  if (s.lastError) {
    lines.push(h(Lines, { key: 'e', lines: wrapLines(`✗ ${s.lastError.code}: ${problemCell(s)}`, width, 2), tone: 'error' }));
    lines.push(h(Text, { key: 'h', dimColor: true }, '  enter edits it · d deletes it'));
  } else if (!s.enabled) lines.push(h(Text, { key: 'h', color: COLOR.off }, '○ switched off: press e to switch it on'));
  else if (s.state === 'needs_sign_in') lines.push(h(Text, { key: 'h', color: COLOR.warn }, '! it needs a sign-in: press ctrl+l'));
  else if (s.description) {
    // Its first line only (instructions are often a page of markdown for the model): t shows them all, as text.
    const more = hasMore(s.description) ? '  (t shows more)' : '';
    lines.push(
      h(
        Text,
        { key: 'd', wrap: 'truncate-end' },
        h(Text, { dimColor: true }, cell(firstLine(s.description), Math.max(10, width - more.length))),
        h(Text, { color: COLOR.off }, more),
      ),
    );
  }
  return h(React.Fragment, null, ...lines);
}
