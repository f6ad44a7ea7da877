/**
 * Small pieces the `/mcp` screen's views share: `h` (React.createElement:
 * the sources are type-stripped TypeScript, so no JSX), a colour per label
 * tone (the symbol is always shown too, so the screen reads without
 * colour), the spinner, the status line, and keys as one event per key.
 *
 * Everything a server, the daemon or a file chose (names, URLs, messages)
 * reaches the terminal through `safe()`: a control character is shown as
 * `\xHH`, never obeyed (docs/cli.md "What servers say is shown, not obeyed").
 */
import React, { useCallback, useContext, useEffect, useRef, useState } from 'react';
import { Text, useInput, type Key } from 'ink';
import { SYMBOLS, toolsLabel } from '../../web/shared/labels.js';
import { safe } from '../client/output.ts';
import type { SaveResult } from './api.ts';
import { splitKeys, type KeyInfo } from './text-input.ts';

export const h = React.createElement;

export type Tone = 'ok' | 'warn' | 'error' | 'off' | 'busy';

/** The colour of each tone; `off` is dim. */
export const COLOR: Record<Tone, string> = { ok: 'green', warn: 'yellow', error: 'red', off: 'gray', busy: 'cyan' };

/** A one-line result of the last action, with its tone. */
export interface Status {
  tone: Tone;
  text: string;
}

/**
 * `text` (made safe) cut into at most `max` lines of at most `width`
 * characters, at spaces where it can be (a word longer than a line is cut
 * where the line ends); the last line ends in `…` when text was left out.
 * Linear in what is shown: a server's text can be megabytes on one line,
 * and only what `max` lines can hold is made safe and cut.
 */
export function wrapLines(text: string, width: number, max: number): string[] {
  const w = Math.max(10, width);
  const out: string[] = [];
  /** Adds the rows of `line` (already made safe, as code points) until there is one more than `max`. */
  const rows = (rest: string[]): void => {
    if (!rest.length) out.push('');
    let at = 0;
    while (at < rest.length && out.length <= max) {
      if (rest.length - at <= w) {
        out.push(rest.slice(at).join(''));
        break;
      }
      let space = -1;
      for (let k = at + w; k >= at; k--) {
        if (rest[k] === ' ') {
          space = k - at;
          break;
        }
      }
      const cut = space > w / 3 ? space : w;
      out.push(
        rest
          .slice(at, at + cut)
          .join('')
          .trimEnd(),
      );
      at += cut;
      while (at < rest.length && /^\s$/u.test(rest[at]!)) at++;
    }
  };
  // Line by line, as far as the rows go (a text of a million line feeds is not split whole).
  for (let from = 0; from <= text.length && out.length <= max;) {
    const nl = text.indexOf('\n', from);
    const end = nl < 0 ? text.length : nl;
    const line = text.slice(from, end > from && text[end - 1] === '\r' && nl >= 0 ? end - 1 : end);
    from = nl < 0 ? text.length + 1 : nl + 1;
    // Enough code units for every row left and one character more (a code point is at most two; safe() only lengthens):
    // a line of megabytes is made safe and cut only as far as it is shown.
    const room = 2 * ((max - out.length) * w + 1);
    const before = out.length;
    rows([...safe(line.length > room ? line.slice(0, room) : line)]);
    // Cut, yet no row left over: what was kept ended in spaces the rows dropped, so the line is taken whole.
    if (line.length > room && out.length <= max) {
      out.length = before;
      rows([...safe(line)]);
    }
  }
  if (out.length <= max) return out;
  const kept = out.slice(0, max);
  kept[max - 1] = `${[...kept[max - 1]!].slice(0, w - 1).join('')}…`;
  return kept;
}

/** Lines of text in one tone, each on its own row (never wrapped by Ink: wrapLines already cut them). */
export function Lines({ lines, tone, bold }: { lines: string[]; tone?: Tone; bold?: boolean }): React.ReactElement {
  return h(
    React.Fragment,
    null,
    ...lines.map((l, i) => h(Text, { key: i, color: tone ? COLOR[tone] : undefined, bold, wrap: 'truncate-end' }, l)),
  );
}

/** The status line: the tone's symbol and the text, made safe, cut to fit its lines. */
export function StatusLine({ status, width, max = 3 }: { status: Status | null; width: number; max?: number }): React.ReactElement | null {
  if (!status) return null;
  return h(Lines, { lines: wrapLines(`${SYMBOLS[status.tone]} ${status.text}`, width, max), tone: status.tone });
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** A spinner and what is being waited for ("trying the server…"), made safe (it may name a server). */
export function Spinner({ text }: { text: string }): React.ReactElement {
  const [i, setI] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setI((n) => (n + 1) % FRAMES.length), 100);
    return () => clearInterval(t);
  }, []);
  return h(Text, { color: COLOR.busy, wrap: 'truncate-end' }, `${FRAMES[i]} ${safe(text)}`);
}

export type KeyHandler = (input: string, key: KeyInfo) => void;

/**
 * Which view has the keys. Ink subscribes a `useInput` in an effect, which
 * runs after the view's first frame is on the terminal: a key typed the
 * moment a view appears (the list after a save, under load) reached nobody.
 * So the app listens once, for good (`useKeyRoute`), and a view takes the
 * keys while it renders, before its frame is written.
 */
const KeyRoute = React.createContext<{ current: KeyHandler | null } | null>(null);
export const KeyRouteProvider = KeyRoute.Provider;

/** The app's one listener: each key (cut apart by splitKeys) goes to `first`, then, unless it returns true, to the current view. */
export function useKeyRoute(first: (input: string, key: KeyInfo) => boolean): { current: KeyHandler | null } {
  const route = useRef<KeyHandler | null>(null);
  useInput((input: string, key: Key) => {
    for (const k of splitKeys(input, key)) if (!first(k.input, k.key)) route.current?.(k.input, k.key);
  });
  return route;
}

/**
 * A view's keys, one call per key: several keys delivered in one read
 * ("abc\r") are cut apart (text-input.ts splitKeys). Inside the app they
 * come through its route; outside it (a view rendered alone), from Ink.
 */
export function useKeys(handler: KeyHandler, isActive = true): void {
  const route = useContext(KeyRoute);
  if (route && isActive) route.current = handler;
  useInput(
    (input: string, key: Key) => {
      for (const k of splitKeys(input, key)) handler(k.input, k.key);
    },
    { isActive: isActive && !route },
  );
}

/** Whether this is ctrl+`letter`. */
export const ctrl = (input: string, key: KeyInfo, letter: string): boolean => key.ctrl && input === letter;

/** A strict save's outcome in words (`check` of the API's save result), with what to do next. */
export function resultStatus(name: string, r: SaveResult, verb?: string): Status {
  const did = verb ?? (r.created ? 'added' : 'saved');
  const tools = typeof r.server?.tools === 'number' ? ` (${toolsLabel(r.server.tools)})` : '';
  const exposed = exposure(name, r.server?.warnings ?? []);
  if (!r.check.tried) return { tone: exposed ? 'warn' : 'off', text: `${did} ${name}: switched off, so not tried${exposed}` };
  if (r.check.result === 'needs_sign_in') return { tone: 'warn', text: `${did} ${name}: it needs a sign-in — press ctrl+l${exposed}` };
  return { tone: exposed ? 'warn' : 'ok', text: `${did} ${name}: connected${tools}${exposed}` };
}

/** What a saved server's warnings say, in a few words: its working directory or arguments reach $ALBEDO_HOME (daemon.json). */
function exposure(name: string, warnings: Array<{ path: Array<string | number> }>): string {
  if (!warnings.length) return '';
  const what = [...new Set(warnings.map((w) => (w.path[0] === 'cwd' ? 'working directory' : 'arguments')))].join(' and ');
  return ` — but its ${what} reach $ALBEDO_HOME (daemon.json, creds.json): albedo mcp show ${name}`;
}

/**
 * State whose latest value key handlers read: several keys can arrive in one read (and so in one event), and
 * each must see what the key before it did, not the value of the last render.
 */
export function useLatest<T>(initial: T): [T, (v: T) => void, { readonly current: T }] {
  const ref = useRef(initial);
  const [value, setValue] = useState(initial);
  const set = useCallback((v: T): void => {
    ref.current = v;
    setValue(v);
  }, []);
  return [value, set, ref];
}
