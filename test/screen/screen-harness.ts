/**
 * The `/mcp` screen as a person sees it: `albedo mcp` in a real terminal
 * (node-pty), every byte it writes fed into a terminal emulator of the same
 * size (@xterm/headless), and the rendered screen read back as lines of
 * text. Tests wait for what a person would see (`waitFor`, bounded, polling
 * the rendered screen), press keys as a terminal sends them, and can search
 * everything ever shown (every rendered frame and the raw output) for a
 * secret. The screen must quit by the end of its test: one still running
 * at teardown is sent ctrl+c (killed if that does not end it) and fails
 * the test.
 */
import pty from 'node-pty';
import xterm from '@xterm/headless';
import { NODE, ROOT } from '../helpers.ts';
import { BIN } from '../daemon/harness.ts';

type Tap = { teardown(fn: () => unknown): void; fail(message: string): unknown };

// @xterm/headless is CommonJS: its Terminal comes through the default export.
const { Terminal } = xterm as unknown as { Terminal: typeof import('@xterm/headless').Terminal };

/** Keys by name, as a terminal in its default modes sends them. */
export const KEYS = {
  up: '\x1b[A',
  down: '\x1b[B',
  right: '\x1b[C',
  left: '\x1b[D',
  home: '\x1b[H',
  end: '\x1b[F',
  enter: '\r',
  tab: '\t',
  'shift+tab': '\x1b[Z',
  esc: '\x1b',
  backspace: '\x7f',
  delete: '\x1b[3~',
  'ctrl+s': '\x13',
  'ctrl+l': '\x0c',
  'ctrl+u': '\x15',
  'ctrl+c': '\x03',
  'ctrl+a': '\x01',
  'ctrl+e': '\x05',
} as const;
export type KeyName = keyof typeof KEYS;

export interface ScreenOptions {
  home: string;
  cols?: number;
  rows?: number;
  /** Extra environment (ALBEDO_NO_BROWSER is set unless `env` sets it to ''). */
  env?: Record<string, string>;
  cwd?: string;
  /** Options for node before the program (`--import` of a preload). */
  nodeArgs?: string[];
}

export interface Screen {
  cols: number;
  rows: number;
  /** The rendered screen now: one string per row, trailing blanks trimmed. */
  lines(): string[];
  /** The rendered screen now, rows joined by line feeds. */
  text(): string;
  /** Waits (bounded) until the rendered screen shows `what`; resolves with the screen's text. */
  waitFor(what: string | RegExp, withinMs?: number): Promise<string>;
  /** Waits (bounded) until the rendered screen no longer shows `what`. */
  waitGone(what: string | RegExp, withinMs?: number): Promise<string>;
  /**
   * Presses keys, one write each. A lone esc is a prefix of every escape sequence, so the screen takes it as esc only
   * once nothing follows it for a moment: after an esc, wait for what it does before pressing the next key.
   */
  press(...keys: KeyName[]): void;
  /** Types text, as keys on a keyboard. */
  type(text: string): void;
  /** Pastes text as a terminal does (bracketed, when the screen asked for bracketed paste). */
  paste(text: string): void;
  /** Whether `needle` ever appeared: in any rendered frame, or anywhere in the raw output (escape sequences removed). */
  everShown(needle: string): boolean;
  /** Every distinct frame rendered so far. */
  frames(): string[];
  /** Which buffer the terminal shows: the alternate screen while the screen runs, the normal one once it has quit. */
  buffer(): 'normal' | 'alternate';
  /** Sends the screen's process a signal. */
  signal(sig: NodeJS.Signals): void;
  /** Resizes the terminal, as a person dragging its window does (the process gets SIGWINCH). */
  resize(cols: number, rows: number): void;
  /** Resolves with the exit status once the process has exited. */
  exited: Promise<number>;
}

const ANSI = /\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** Opens `albedo mcp` in a terminal of `cols`×`rows` (100×30) for `home`. */
export function openScreen(t: Tap, o: ScreenOptions): Screen {
  let cols = o.cols ?? 100;
  let rows = o.rows ?? 30;
  const term = new Terminal({ cols, rows, allowProposedApi: true, scrollback: 1000 });
  const { ALBEDO_TEST_TAG: _drop, ...base } = process.env as Record<string, string>;
  const env = { ...base, ALBEDO_HOME: o.home, ALBEDO_NO_BROWSER: '1', TERM: 'xterm-256color', ...o.env };
  if (env.ALBEDO_NO_BROWSER === '') delete (env as Record<string, string | undefined>).ALBEDO_NO_BROWSER;
  const p = pty.spawn(NODE, [...(o.nodeArgs ?? []), BIN, 'mcp'], { name: 'xterm-256color', cols, rows, cwd: o.cwd ?? ROOT, env });
  let raw = '';
  const frames: string[] = [];
  let running = true;
  const read = (): string[] => {
    const b = term.buffer.active;
    const out: string[] = [];
    for (let i = 0; i < rows; i++) out.push(b.getLine(b.viewportY + i)?.translateToString(true) ?? '');
    return out;
  };
  /** Everything in the active buffer, scrollback included (the normal screen keeps what scrolled away). */
  const all = (): string => {
    const b = term.buffer.active;
    const out: string[] = [];
    for (let i = 0; i < b.length; i++) out.push(b.getLine(i)?.translateToString(true) ?? '');
    return out.join('\n');
  };
  p.onData((d) => {
    raw += d;
    term.write(d, () => {
      const f = all();
      if (frames.at(-1) !== f) frames.push(f);
    });
  });
  const exited = new Promise<number>((resolve) =>
    p.onExit(({ exitCode }) => {
      running = false;
      resolve(exitCode);
    }),
  );
  t.teardown(async () => {
    if (!running) return;
    p.write(KEYS['ctrl+c']);
    const quit = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    if (!quit) p.kill('SIGKILL');
    // A failure, not a throw: a teardown that throws would skip the ones after it (the daemon's, which stops it).
    t.fail(`the screen was still running at the end of the test${quit ? '' : ' and did not quit on ctrl+c'}:\n${read().join('\n')}`);
  });

  const matches = (what: string | RegExp): boolean => {
    const s = read().join('\n');
    return typeof what === 'string' ? s.includes(what) : what.test(s);
  };
  const poll = async (done: () => boolean, what: string, withinMs: number): Promise<string> => {
    const end = Date.now() + withinMs;
    while (!done()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the screen shows:\n${read().join('\n')}`);
      if (!running) throw new Error(`the screen exited while waiting for ${what}; it showed:\n${read().join('\n')}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    return read().join('\n');
  };
  return {
    get cols() {
      return cols;
    },
    get rows() {
      return rows;
    },
    exited,
    lines: read,
    text: () => read().join('\n'),
    waitFor: (what, withinMs = 60_000) => poll(() => matches(what), String(what), withinMs),
    waitGone: (what, withinMs = 60_000) => poll(() => !matches(what), `${String(what)} to go`, withinMs),
    press: (...keys) => {
      for (const k of keys) p.write(KEYS[k]);
    },
    type: (text) => p.write(text),
    paste: (text) => p.write(term.modes.bracketedPasteMode ? `\x1b[200~${text}\x1b[201~` : text),
    everShown: (needle) => frames.some((f) => f.includes(needle)) || raw.includes(needle) || raw.replace(ANSI, '').includes(needle),
    frames: () => [...frames],
    buffer: () => term.buffer.active.type,
    signal: (sig) => p.kill(sig),
    resize: (c, r) => {
      cols = c;
      rows = r;
      term.resize(c, r);
      p.resize(c, r);
    },
  };
}

/** The text of the rows after the one matching `from` (blank rows right after it skipped) up to the next blank row, joined as one. */
export function block(lines: string[], from: RegExp): string {
  let i = lines.findIndex((l) => from.test(l));
  if (i < 0) return '';
  while (i + 1 < lines.length && lines[i + 1]!.trim() === '') i++;
  const out: string[] = [];
  for (let j = i + 1; j < lines.length && lines[j]!.trim() !== ''; j++) out.push(lines[j]!.trim());
  return out.join('');
}

/** The text a form row shows after its label (`url`, `bearer token`, …), or null when no row has that label. */
export function fieldText(lines: string[], label: string): string | null {
  const re = new RegExp(`^ [› ] ${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s+(.*)$`);
  for (const l of lines) {
    const m = re.exec(l);
    if (m) return m[1]!.trim();
  }
  return null;
}

/** The row of the server list that names `name` (its first column), or null. */
export function rowOf(lines: string[], name: string): string | null {
  return lines.find((l) => new RegExp(`^ [› ] ${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s`).test(l)) ?? null;
}
