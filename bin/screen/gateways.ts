/**
 * `g` on the `/mcp` screen: the daemon's gateways (`GET /v1/gateways`, read
 * again every two seconds), each with its kind, how many tokens and clients
 * it has and what keeps it from serving; below, the selected one: what it
 * serves, the two ways in (`albedo gateway NAME`, and its URL with a token),
 * and who is connected now (each client's own name, era, transport, since
 * when, calls). Read only: a gateway is added, and its tokens minted or
 * revoked, with `albedo gateway` or in the web pane — a token shown on this
 * screen would stay in the terminal's scrollback. esc goes back.
 */
import React, { useCallback } from 'react';
import { Box, Text } from 'ink';
import { EMPTY } from '../../web/shared/labels.js';
import { cell, safe } from '../client/output.ts';
import type { Gateway, GatewayClient, ScreenApi } from './api.ts';
import { col, last, usePolled } from './cells.ts';
import { COLOR, h, Spinner, StatusLine, useKeys, useLatest, type Tone } from './ui.ts';

export interface GatewaysProps {
  api: ScreenApi;
  width: number;
  height: number;
  onBack(): void;
  quit(): void;
}

const KIND_W = 12;
const TOKENS_W = 6;
const CLIENTS_W = 7;
const ERA_W = 10;
const TRANSPORT_W = 9;
const SINCE_W = 20;

/** What a gateway serves, in a few words (the words of `albedo gateway list`). */
export function servesOf(g: Gateway): string {
  const d = g.definition ?? {};
  if (d.server !== undefined) return `the server ${d.server}, under its own names`;
  const inc = d.servers?.include;
  const exc = d.servers?.exclude;
  const what = inc ? inc.join(', ') || 'no server' : 'every enabled server';
  return `${what}${exc?.length ? ` but ${exc.join(', ')}` : ''}, composed`;
}

/** When, to the minute, in UTC; `—` for what is not a time. */
export function minute(v: unknown): string {
  if (typeof v !== 'string' && typeof v !== 'number') return EMPTY;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? EMPTY : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function Gateways(p: GatewaysProps): React.ReactElement {
  const [selected, setSelected, selectedNow] = useLatest(0);
  // Clients come and go: read again while open, as the list of servers is.
  const { data, problem } = usePolled(useCallback(() => p.api.gateways(), [p.api]));

  const gateways = data?.gateways ?? [];
  useKeys((input, key) => {
    if (key.ctrl) return;
    if (key.escape) return p.onBack();
    if (input === 'q') return p.quit();
    const i = selectedNow.current;
    if (key.upArrow || input === 'k') return setSelected(Math.max(0, i - 1));
    if (key.downArrow || input === 'j') setSelected(Math.max(0, Math.min(gateways.length - 1, i + 1)));
  });

  const inner = Math.max(30, p.width - 2);
  const at = Math.min(selected, Math.max(0, gateways.length - 1));
  const g: Gateway | undefined = gateways[at];

  // Title, margins, two headers, the selected one's two lines, scroll lines, the footer: the rest is shared by the
  // gateways and the selected one's clients, so the view never outgrows the terminal (Ink redraws that badly).
  const avail = Math.max(2, p.height - 14);
  const gwRoom = Math.max(1, Math.min(gateways.length, Math.ceil(avail / 2)));
  const clientRoom = Math.max(1, avail - gwRoom);
  const first = Math.min(Math.max(0, at - gwRoom + 1), Math.max(0, gateways.length - gwRoom));
  const shown = gateways.slice(first, first + gwRoom);
  // NAME as wide as its longest (at most 24), leaving PROBLEM a few columns in the narrowest terminal: a row never wraps.
  const longest = Math.max(4, ...gateways.map((x) => safe(x.name).length + (x.definition?.enabled === false ? 6 : 0)));
  const nameW = Math.max(4, Math.min(24, longest, inner - 2 - (KIND_W + 1) - (TOKENS_W + 1) - (CLIENTS_W + 1) - 10));

  let body: React.ReactElement;
  if (problem && !data) {
    body = h(StatusLine, {
      status: { tone: 'error', text: `cannot read the gateways: ${problem.code}: ${problem.message}` },
      width: inner,
    });
  } else if (!data) body = h(Spinner, { text: 'asking the daemon…' });
  else if (!gateways.length) {
    body = h(Text, { color: COLOR.off, wrap: 'wrap' }, 'No gateway yet. albedo gateway add NAME makes one (docs/gateway.md).');
  } else {
    body = h(
      Box,
      { flexDirection: 'column' },
      h(
        Box,
        null,
        h(Box, { flexShrink: 0 }, h(Text, null, '  ')),
        col(nameW, 'NAME', 'off'),
        col(KIND_W, 'KIND', 'off'),
        col(TOKENS_W, 'TOKENS', 'off'),
        col(CLIENTS_W, 'CLIENTS', 'off'),
        last('PROBLEM', 'off'),
      ),
      ...shown.map((x, k) => {
        const sel = first + k === at;
        const off = x.definition?.enabled === false;
        const problems = (x.problems ?? []).map((q) => q.message).join('; ');
        return h(
          Box,
          { key: x.name },
          h(Box, { flexShrink: 0 }, h(Text, { color: COLOR.busy }, sel ? '› ' : '  ')),
          col(nameW, `${safe(x.name)}${off ? ' (off)' : ''}`, off ? 'off' : undefined, sel),
          col(KIND_W, x.kind),
          col(TOKENS_W, String(x.tokens?.length ?? 0)),
          col(CLIENTS_W, String(x.clients?.length ?? 0)),
          last(problems ? `! ${cell(problems, inner)}` : EMPTY, problems ? 'warn' : 'off'),
        );
      }),
      gateways.length > gwRoom ? h(Text, { dimColor: true }, `  ${first + 1}–${first + shown.length} of ${gateways.length}`) : null,
    );
  }

  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true }, 'Gateways', h(Text, { dimColor: true }, gateways.length ? `  ${gateways.length} defined` : '')),
    data?.broken
      ? h(Text, { color: COLOR.warn, wrap: 'truncate-end' }, '! extensions.json is broken: the gateways shown are the last valid ones')
      : null,
    h(Box, { marginTop: 1, flexDirection: 'column' }, body),
    g ? h(Box, { marginTop: 1, flexDirection: 'column' }, h(Selected, { g, port: p.api.port, width: inner, rows: clientRoom })) : null,
    problem && data
      ? h(StatusLine, {
          status: { tone: 'error', text: `cannot read the gateways: ${problem.code}: ${problem.message}` },
          width: inner,
          max: 1,
        })
      : null,
    h(
      Box,
      { marginTop: 1 },
      h(
        Text,
        { dimColor: true, wrap: 'truncate-end' },
        `${gateways.length ? '↑↓/jk select · ' : ''}esc back · q quit · tokens: albedo gateway token NAME, or the web pane`,
      ),
    ),
  );
}

/** The selected gateway: what it serves, the ways in, and its clients now (at most `rows` of them). */
function Selected({ g, port, width, rows }: { g: Gateway; port: number | null; width: number; rows: number }): React.ReactElement {
  const url = port ? `http://127.0.0.1:${port}/mcp/gateways/${encodeURIComponent(g.name)}` : `/mcp/gateways/${encodeURIComponent(g.name)}`;
  const clients: GatewayClient[] = g.clients ?? [];
  // SINCE only where the row has room for it; CLIENT as wide as its longest, within what the others leave.
  const withSince = width >= 70;
  const others = 2 + (ERA_W + 1) + (TRANSPORT_W + 1) + (withSince ? SINCE_W + 1 : 0) + 6;
  const longest = Math.max(6, ...clients.slice(0, rows).map((c) => cell(c.name ?? '(unnamed)', 30).length));
  const nameW = Math.max(6, Math.min(30, longest, width - others));
  const col = (w: number, text: string, tone?: Tone): React.ReactElement =>
    h(Box, { width: w, marginRight: 1, flexShrink: 0 }, h(Text, { wrap: 'truncate-end', color: tone ? COLOR[tone] : undefined }, text));
  const lines: React.ReactElement[] = [
    h(Text, { key: 't', wrap: 'truncate-end' }, h(Text, { bold: true }, safe(g.name)), `  ${cell(servesOf(g), width)}`),
    h(Text, { key: 'w', wrap: 'truncate-end', dimColor: true }, cell(`stdio: albedo gateway ${g.name} · http: ${url} + a token`, width)),
  ];
  if (!clients.length) lines.push(h(Text, { key: 'n', color: COLOR.off }, '○ no client connected'));
  else {
    const shown = clients.slice(0, clients.length > rows ? Math.max(1, rows - 1) : rows);
    lines.push(
      h(
        Box,
        { key: 'h' },
        h(Text, null, '  '),
        col(nameW, 'CLIENT', 'off'),
        col(ERA_W, 'ERA', 'off'),
        col(TRANSPORT_W, 'TRANSPORT', 'off'),
        withSince ? col(SINCE_W, 'SINCE', 'off') : null,
        h(Text, { color: COLOR.off }, 'CALLS'),
      ),
      ...shown.map((c) =>
        h(
          Box,
          { key: c.id },
          h(Text, null, '  '),
          // The client's own words: one line, escaped, bounded.
          col(nameW, cell(c.name ?? '(unnamed)', 30)),
          col(ERA_W, cell(String(c.era), 20)),
          col(TRANSPORT_W, cell(String(c.transport), 10)),
          withSince ? col(SINCE_W, minute(c.since)) : null,
          h(Text, null, String(c.calls)),
        ),
      ),
    );
    if (shown.length < clients.length) lines.push(h(Text, { key: 'm', dimColor: true }, `  … ${clients.length - shown.length} more`));
  }
  return h(React.Fragment, null, ...lines);
}
