/**
 * `a` on the `/mcp` screen: the ACP sessions (`GET /v1/acp/sessions`, read
 * again every two seconds), each with its attachment (an `albedo acp`
 * adapter holds it, or none), its state (ready, reload pending, reattach
 * required) and the agent's command line; below, the selected one: its id,
 * the agent's own session id, its workspace, whether editor-mcp is on, and
 * the editor's servers with their states. Read only. Everything an editor
 * or an agent chose (commands, arguments, names, paths) is shown escaped.
 */
import React, { useCallback } from 'react';
import { Box, Text } from 'ink';
import { acpStateLabel, attachedLabel, overlayStateLabel, switchLabel } from '../../web/shared/acp.js';
import { cell, safe } from '../client/output.ts';
import type { AcpSession, ScreenApi } from './api.ts';
import { col, last, usePolled } from './cells.ts';
import { COLOR, h, Spinner, StatusLine, useKeys, useLatest } from './ui.ts';

export interface AcpProps {
  api: ScreenApi;
  width: number;
  height: number;
  onBack(): void;
  quit(): void;
}

const ID_W = 8;
const ATTACH_W = 10;
const STATE_W = 19;

/** A command line in one line: words with spaces or quotes quoted, escaped (safe) and bounded. */
export function commandLine(words: string[], max: number): string {
  return cell(words.map((w) => (/[\s'"\\]/.test(w) || w === '' ? JSON.stringify(w) : w)).join(' '), max);
}

export function Acp(p: AcpProps): React.ReactElement {
  const [selected, setSelected, selectedNow] = useLatest(0);
  // Adapters attach and let go, servers come and go: read again while open.
  const { data: sessions, problem } = usePolled(useCallback(() => p.api.acpSessions(), [p.api]));

  const list = sessions ?? [];
  useKeys((input, key) => {
    if (key.ctrl) return;
    if (key.escape) return p.onBack();
    if (input === 'q') return p.quit();
    const i = selectedNow.current;
    if (key.upArrow || input === 'k') return setSelected(Math.max(0, i - 1));
    if (key.downArrow || input === 'j') setSelected(Math.max(0, Math.min(list.length - 1, i + 1)));
  });

  const inner = Math.max(30, p.width - 2);
  const at = Math.min(selected, Math.max(0, list.length - 1));

  // Title, margins, header, the selected one's four lines and its servers, the footer: the list gets about half the rest.
  const avail = Math.max(2, p.height - 14);
  const room = Math.max(1, Math.min(list.length, Math.ceil(avail / 2)));
  const serverRoom = Math.max(1, avail - room);
  const first = Math.min(Math.max(0, at - room + 1), Math.max(0, list.length - room));
  const attached = list.filter((a) => a.attached).length;

  let body: React.ReactElement;
  if (problem && sessions === undefined) {
    body = h(StatusLine, {
      status: { tone: 'error', text: `cannot read the ACP sessions: ${problem.code}: ${problem.message}` },
      width: inner,
    });
  } else if (sessions === undefined) body = h(Spinner, { text: 'asking the daemon…' });
  else if (sessions === null) body = h(Text, { color: COLOR.off }, 'This daemon has no ACP sessions (it predates albedo acp).');
  else if (!list.length) {
    body = h(Text, { color: COLOR.off, wrap: 'wrap' }, 'No ACP session. An editor opens one through albedo acp -- AGENT (docs/acp.md).');
  } else {
    body = h(
      Box,
      { flexDirection: 'column' },
      h(
        Box,
        null,
        h(Box, { flexShrink: 0 }, h(Text, null, '  ')),
        col(ID_W, 'SESSION', 'off'),
        col(ATTACH_W, 'ATTACHMENT', 'off'),
        col(STATE_W, 'STATE', 'off'),
        last('AGENT', 'off'),
      ),
      ...list.slice(first, first + room).map((a, k) => {
        const sel = first + k === at;
        const att = attachedLabel(a.attached);
        const st = acpStateLabel(a.state);
        return h(
          Box,
          { key: a.id },
          h(Box, { flexShrink: 0 }, h(Text, { color: COLOR.busy }, sel ? '› ' : '  ')),
          col(ID_W, cell(a.id.slice(0, ID_W), ID_W), undefined, sel),
          col(ATTACH_W, `${att.symbol} ${att.text}`, att.tone),
          col(STATE_W, `${st.symbol} ${st.text}`, st.tone),
          last(commandLine([a.agent.command, ...a.agent.args], inner)),
        );
      }),
      list.length > room
        ? h(Text, { dimColor: true }, `  ${first + 1}–${first + Math.min(room, list.length - first)} of ${list.length}`)
        : null,
    );
  }

  const a = list[at];
  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true }, 'ACP sessions', h(Text, { dimColor: true }, list.length ? `  ${list.length}, ${attached} attached` : '')),
    h(Box, { marginTop: 1, flexDirection: 'column' }, body),
    a ? h(Box, { marginTop: 1, flexDirection: 'column' }, h(Selected, { a, width: inner, rows: serverRoom })) : null,
    problem && sessions !== undefined
      ? h(StatusLine, {
          status: { tone: 'error', text: `cannot read the ACP sessions: ${problem.code}: ${problem.message}` },
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
        `${list.length ? '↑↓/jk select · ' : ''}esc back · q quit · X then s switches its extensions`,
      ),
    ),
  );
}

/** The selected ACP session: ids, workspace, editor-mcp, and the editor's servers (at most `rows` of them). */
function Selected({ a, width, rows }: { a: AcpSession; width: number; rows: number }): React.ReactElement {
  const servers = a.overlay?.servers ?? [];
  const ed = switchLabel(a.editorMcp);
  const lines: React.ReactElement[] = [
    h(
      Text,
      { key: 'i', wrap: 'truncate-end' },
      h(Text, { bold: true }, cell(a.id, 64)),
      h(Text, { dimColor: true }, a.acpSessionId === undefined ? '  not bound yet' : `  agent session ${cell(a.acpSessionId, 60)}`),
    ),
    h(Text, { key: 'w', wrap: 'truncate-end' }, h(Text, { dimColor: true }, 'workspace '), cell(a.cwd, width)),
    h(
      Text,
      { key: 'e', wrap: 'truncate-end' },
      h(Text, { dimColor: true }, 'editor-mcp '),
      h(Text, { color: COLOR[ed.tone] }, `${ed.symbol} ${ed.text}`),
    ),
  ];
  if (!servers.length) lines.push(h(Text, { key: 'n', color: COLOR.off }, '○ the editor sent no server'));
  else {
    const shown = servers.slice(0, servers.length > rows ? Math.max(1, rows - 1) : rows);
    const nameW = Math.max(6, Math.min(30, Math.max(...shown.map((s) => safe(s.name).length))));
    lines.push(h(Text, { key: 'h', dimColor: true }, "the editor's servers"));
    for (const s of shown) {
      const l = overlayStateLabel(s.state);
      lines.push(
        h(
          Box,
          { key: `s:${s.name}` },
          h(Text, null, '  '),
          h(Box, { width: nameW, marginRight: 1, flexShrink: 0 }, h(Text, { wrap: 'truncate-end' }, cell(s.name, 30))),
          h(Text, { color: COLOR[l.tone], wrap: 'truncate-end' }, `${l.symbol} ${safe(l.text)}`),
        ),
      );
    }
    if (shown.length < servers.length) lines.push(h(Text, { key: 'm', dimColor: true }, `  … ${servers.length - shown.length} more`));
  }
  return h(React.Fragment, null, ...lines);
}
