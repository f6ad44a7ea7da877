/**
 * `t` on the `/mcp` screen: the selected server's tools, from the catalogue
 * saved for it (`GET /v1/mcp/servers/{name}/tools`) — no session is opened
 * and the server is not started. Each tool's name and the first line of its
 * description, scrolling around the selection; below, the selected tool's
 * description and parameters (its input schema's properties and required
 * ones), cut to fit. enter shows the whole tool, `i` the server's
 * instructions (the first line is always shown above), both in the pager;
 * esc goes back to the list. A server's words are text, never markup, and
 * reach the terminal through safe().
 */
import React, { useEffect, useState } from 'react';
import { Box, Text } from 'ink';
import { SYMBOLS } from '../../web/shared/labels.js';
import { cell, safe } from '../client/output.ts';
import { problemOf, type Problem, type ScreenApi, type ServerTools, type Tool } from './api.ts';
import { Pager } from './pager.ts';
import { firstLine, hasMore, paramLine, paramsOf, toolPage } from './tool-text.ts';
import { COLOR, h, Lines, Spinner, StatusLine, useKeys, useLatest, wrapLines } from './ui.ts';

export interface ToolsProps {
  api: ScreenApi;
  name: string;
  width: number;
  height: number;
  onBack(): void;
  quit(): void;
}

type Page = { title: string; lines: string[] } | null;

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** What the catalogue holds besides tools, and when it was discovered, on one line. */
function summary(d: ServerTools): string {
  const parts = [
    plural(d.tools?.length ?? 0, 'tool'),
    plural(d.resources ?? 0, 'resource'),
    plural(d.resourceTemplates ?? 0, 'resource template'),
    plural(d.prompts ?? 0, 'prompt'),
  ];
  const who = d.serverInfo ? `${d.serverInfo.name} ${d.serverInfo.version}` : null;
  const when = d.discoveredAt ? `discovered ${d.discoveredAt.slice(0, 16).replace('T', ' ')} UTC` : null;
  return [parts.join(' · '), who, when].filter(Boolean).join(' · ');
}

export function Tools(p: ToolsProps): React.ReactElement {
  const [data, setData] = useState<ServerTools | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [selected, setSelected, selectedNow] = useLatest(0);
  const [page, setPage] = useState<Page>(null);
  const [note, setNote] = useState<string | null>(null);

  useEffect(() => {
    let gone = false;
    p.api.tools(p.name).then(
      (d) => {
        if (!gone) setData(d);
      },
      (err: unknown) => {
        if (!gone) setProblem(problemOf(err));
      },
    );
    return () => {
      gone = true;
    };
  }, [p.name]);

  const tools: Tool[] = data?.tools ?? [];
  useKeys((input, key) => {
    if (key.ctrl) return;
    if (key.escape) return p.onBack();
    if (input === 'q') return p.quit();
    setNote(null);
    const i = selectedNow.current;
    if (key.upArrow || input === 'k') return setSelected(Math.max(0, i - 1));
    if (key.downArrow || input === 'j') return setSelected(Math.max(0, Math.min(tools.length - 1, i + 1)));
    if (key.home || input === 'g') return setSelected(0);
    if (key.end || input === 'G') return setSelected(Math.max(0, tools.length - 1));
    if (input === 'i' && data) {
      if (!data.instructions?.trim()) return setNote(`${p.name} gave no instructions`);
      const lines = data.instructions.trim().split(/\r\n|\r|\n/);
      return setPage({ title: `Instructions of ${p.name} (as the server wrote them, for the model)`, lines });
    }
    const tool = tools[i];
    if (key.return && tool) setPage({ title: `${p.name} · ${tool.name}`, lines: toolPage(tool) });
  }, page === null);

  if (page) return h(Pager, { ...page, width: p.width, height: p.height, onBack: () => setPage(null), quit: p.quit });

  const inner = Math.max(30, p.width - 2);
  const head: React.ReactElement[] = [
    h(
      Text,
      { key: 't', bold: true, wrap: 'truncate-end' },
      `Tools of ${safe(p.name)}`,
      data?.tools ? h(Text, { dimColor: true }, `  ${cell(summary(data), inner)}`) : null,
    ),
  ];
  let body: React.ReactElement;
  let detail: React.ReactElement | null = null;
  if (problem) {
    const text = `cannot read the tools of ${p.name}: ${problem.code}: ${problem.message}`;
    body = h(StatusLine, { status: { tone: 'error', text }, width: inner });
  } else if (!data) body = h(Spinner, { text: `reading the saved catalogue of ${p.name}…` });
  else if (data.tools === null) {
    body = h(Lines, {
      lines: wrapLines(
        `No catalogue is saved for ${p.name} as it is configured now: it has not answered since it was added, ` +
          'changed or signed in to. A session, or saving it again (enter in the list), dials it and saves what it offers.',
        inner,
        4,
      ),
      tone: 'off',
    });
  } else {
    // The server's own description, unless the terminal is too short for it besides a tool row and the selected tool.
    const about = p.height >= 13 ? firstLine(data.serverInfo?.description) : '';
    if (about) head.push(h(Text, { key: 'a', wrap: 'truncate-end' }, `about: ${cell(about, inner)}`));
    const ins = firstLine(data.instructions);
    head.push(
      h(
        Text,
        { key: 'i', wrap: 'truncate-end', dimColor: !ins },
        ins ? `instructions: ${cell(ins, inner)}` : 'no instructions',
        ins && hasMore(data.instructions) ? h(Text, { dimColor: true }, '  (i shows all)') : null,
      ),
    );
    if (!tools.length) body = h(Text, { color: COLOR.off }, `${safe(p.name)} offers no tools`);
    else {
      const at = Math.min(selected, tools.length - 1);
      // Title, summary, instructions, margins, the scroll line, the detail, the footer: the rest is for the tools. At the
      // screen's smallest (12 rows) one tool row is left: the view never outgrows the terminal (Ink redraws that badly).
      const fixed = 11 + (about ? 1 : 0);
      const detailRows = Math.max(2, Math.min(8, Math.floor((p.height - fixed) / 2)));
      const room = Math.max(1, p.height - fixed - detailRows);
      const first = Math.min(Math.max(0, at - room + 1), Math.max(0, tools.length - room));
      const shown = tools.slice(first, first + room);
      const nameW = Math.min(Math.max(8, ...shown.map((t) => safe(t.name).length)), Math.floor(inner / 2));
      body = h(
        Box,
        { flexDirection: 'column' },
        ...shown.map((t, k) => {
          const sel = first + k === at;
          // Keyed by place: a server may list two tools of one name (React would print the key, raw, in its warning).
          return h(
            Box,
            { key: first + k },
            h(Box, { flexShrink: 0 }, h(Text, { color: COLOR.busy }, sel ? '› ' : '  ')),
            h(Box, { width: 2, flexShrink: 0 }, h(Text, { color: COLOR.off }, t.enabled ? ' ' : SYMBOLS.off)),
            h(
              Box,
              { width: nameW, marginRight: 2, flexShrink: 0 },
              h(Text, { wrap: 'truncate-end', bold: sel, dimColor: !t.enabled }, safe(t.name)),
            ),
            h(
              Box,
              { flexGrow: 1, flexShrink: 1, minWidth: 0 },
              h(Text, { wrap: 'truncate-end', dimColor: true }, cell(firstLine(t.description) || t.title || '', inner)),
            ),
          );
        }),
        tools.length > room ? h(Text, { dimColor: true }, `  ${first + 1}–${first + shown.length} of ${tools.length}`) : null,
      );
      detail = h(Detail, { tool: tools[at]!, width: inner, rows: detailRows });
    }
  }
  const keys = data?.tools?.length ? '↑↓/jk select · enter the whole tool · i instructions · esc back · q quit' : 'esc back · q quit';
  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    ...head,
    h(Box, { marginTop: 1, flexDirection: 'column' }, body),
    detail ? h(Box, { marginTop: 1, flexDirection: 'column' }, detail) : null,
    // A note (until the next key) takes the keys' row, so the view keeps its height.
    h(
      Box,
      { marginTop: 1 },
      note
        ? h(StatusLine, { status: { tone: 'off', text: note }, width: inner, max: 1 })
        : h(Text, { dimColor: true, wrap: 'truncate-end' }, keys),
    ),
  );
}

/** The selected tool: its description's first lines and its parameters, cut to `rows` (enter shows all). */
function Detail({ tool, width, rows }: { tool: Tool; width: number; rows: number }): React.ReactElement {
  const params = paramsOf(tool);
  const about = tool.description?.trim()
    ? wrapLines(tool.description.trim(), width, Math.max(1, Math.min(3, rows - 1 - Math.min(params.length, 2))))
    : ['(no description)'];
  const left = Math.max(0, rows - about.length - 1);
  // Only the parameters that fit are made into lines (a schema can have thousands).
  let plines = params.slice(0, left).map((x) => cell(`  ${paramLine(x)}`, width));
  const kept = Math.max(0, left - 1);
  if (params.length > left) plines = [...plines.slice(0, kept), `  … ${params.length - kept} more: enter shows all`];
  const title = tool.title && tool.title !== tool.name ? `  ${cell(tool.title, width)}` : '';
  return h(
    React.Fragment,
    null,
    h(
      Text,
      { wrap: 'truncate-end' },
      h(Text, { bold: true }, safe(tool.name)),
      h(Text, { dimColor: true }, title),
      tool.enabled ? null : h(Text, { color: COLOR.off }, `  ${SYMBOLS.off} kept from the model by the entry`),
    ),
    h(Lines, { lines: about }),
    params.length ? h(Lines, { lines: plines, tone: 'off' }) : h(Text, { color: COLOR.off }, '  no parameters'),
  );
}
