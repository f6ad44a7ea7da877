/**
 * The pieces the `/mcp` screen's list views share: a fixed-width cell, the
 * last cell of a row (it takes the rest and is the one cut), and a reading
 * of the daemon polled every two seconds while the view is open.
 */
import React, { useCallback, useEffect, useRef, useState } from 'react';
import { Box, Text } from 'ink';
import { problemOf, type Problem } from './api.ts';
import { COLOR, h, type Tone } from './ui.ts';

export const POLL_MS = 2_000;

/** A cell of fixed width, never shrunk: the row's last cell is cut instead. */
export function col(w: number, text: string, tone?: Tone, bold?: boolean): React.ReactElement {
  return h(
    Box,
    { width: w, marginRight: 1, flexShrink: 0 },
    h(Text, { wrap: 'truncate-end', color: tone ? COLOR[tone] : undefined, bold }, text),
  );
}

/** The row's last cell: it grows into what is left and is cut at its end. */
export function last(text: string, tone?: Tone): React.ReactElement {
  return h(
    Box,
    { flexGrow: 1, flexShrink: 1, minWidth: 0 },
    h(Text, { wrap: 'truncate-end', color: tone ? COLOR[tone] : undefined }, text),
  );
}

/**
 * `read` now and every POLL_MS while mounted, one reading at a time; the
 * latest answer (undefined until the first) and the latest failure (cleared
 * by the next answer).
 */
export function usePolled<T>(read: () => Promise<T>): { data: T | undefined; problem: Problem | null } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | null>(null);
  const reading = useRef(false);
  const once = useCallback(() => {
    if (reading.current) return;
    reading.current = true;
    read()
      .then(
        (d) => {
          setData(d);
          setProblem(null);
        },
        (err: unknown) => setProblem(problemOf(err)),
      )
      .finally(() => {
        reading.current = false;
      });
  }, [read]);
  useEffect(() => {
    once();
    const t = setInterval(once, POLL_MS);
    return () => clearInterval(t);
  }, [once]);
  return { data, problem };
}
