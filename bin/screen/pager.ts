/**
 * A long text of a server shown whole on the `/mcp` screen — its
 * instructions, one tool with all its parameters — scrolled a line (↑↓, j k)
 * or a page (space / page down, b / page up) at a time, home / end to its
 * ends; esc goes back. The text is shown as text: markdown is not rendered,
 * and every line passes through wrapLines (safe(): a control character is
 * spelled out, never obeyed).
 */
import React, { useMemo, useState } from 'react';
import { Box, Text } from 'ink';
import { safe } from '../client/output.ts';
import { h, Lines, useKeys, wrapLines } from './ui.ts';
import type { KeyInfo } from './text-input.ts';

export interface PagerProps {
  title: string;
  /** The text's lines, raw: each is wrapped to the width here. */
  lines: string[];
  width: number;
  height: number;
  onBack(): void;
  quit(): void;
}

/** Ink reports page up / page down too, beside the keys the screen's KeyInfo names. */
type PageKey = KeyInfo & { pageUp?: boolean; pageDown?: boolean };

/** The rows `lines` make at `width`: each wrapped (never cut: a pager shows all). */
export function pagerRows(lines: string[], width: number): string[] {
  return lines.flatMap((l) => wrapLines(l, width, Number.MAX_SAFE_INTEGER));
}

export function Pager(p: PagerProps): React.ReactElement {
  const inner = Math.max(20, p.width - 2);
  // Wrapped once per text and width, not on every key (a server's text can be megabytes).
  const rows = useMemo(() => pagerRows(p.lines, inner), [p.lines, inner]);
  // Title, a blank row, the text, a blank row, the position and keys.
  const room = Math.max(3, p.height - 5);
  const last = Math.max(0, rows.length - room);
  const [top, setTop] = useState(0);
  const at = Math.min(top, last);

  useKeys((input, key: PageKey) => {
    if (key.ctrl) return;
    if (key.escape) return p.onBack();
    if (input === 'q') return p.quit();
    let to: number | null = null;
    if (key.upArrow || input === 'k') to = at - 1;
    else if (key.downArrow || input === 'j') to = at + 1;
    else if (input === ' ' || key.pageDown) to = at + room - 1;
    else if (input === 'b' || key.pageUp) to = at - room + 1;
    else if (key.home || input === 'g') to = 0;
    else if (key.end || input === 'G') to = last;
    if (to !== null) setTop(Math.max(0, Math.min(last, to)));
  });

  // A blank line is a row of its own (Ink gives an empty text no height).
  const shown = rows.slice(at, at + room).map((r) => r || ' ');
  const where = rows.length > room ? `lines ${at + 1}–${at + shown.length} of ${rows.length} · ` : '';
  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true, wrap: 'truncate-end' }, safe(p.title)),
    h(Box, { marginTop: 1, flexDirection: 'column', height: room }, h(Lines, { lines: shown })),
    h(
      Box,
      { marginTop: 1 },
      h(
        Text,
        { dimColor: true, wrap: 'truncate-end' },
        `${where}${rows.length > room ? '↑↓/jk scroll · space/b page · ' : ''}esc back · q quit`,
      ),
    ),
  );
}
