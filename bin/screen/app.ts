/**
 * `albedo mcp` on a terminal: the `/mcp` screen (docs/design.md, "The
 * server form" and "Sign-in"; docs/cli.md "albedo mcp (the /mcp
 * screen)"). A client of the daemon's HTTP API like every other command
 * (api.ts), drawn with Ink.
 *
 * Why Ink: it is the ecosystem's choice for terminal UIs in TypeScript —
 * Claude Code, Gemini CLI and Codex's TypeScript CLI are built on it — so
 * its behaviour in real terminals is well trodden; it is maintained; it
 * gives React's model (state in, screen out, re-rendered on change), which
 * keeps a form with a spinner, a poll and a sign-in in flight simple; and it
 * handles raw mode (so ctrl+s reaches the screen: raw mode turns off
 * XON/XOFF), escape-sequence parsing (a lone esc told from an arrow key),
 * bracketed paste, resizing, and restoring the terminal on exit.
 *
 * Ink and React are loaded only here, and this module only when the screen
 * opens (bin/commands/mcp.ts imports it on demand): `albedo mcp list` and the
 * other commands do not pay for them.
 */
import React, { useCallback, useEffect, useRef, useState } from 'react';
import { Box, Text, render, useApp, useWindowSize } from 'ink';
import { problemOf, ScreenApi, type Problem, type Server } from './api.ts';
import { Form } from './form.ts';
import { Acp } from './acp.ts';
import { Extensions } from './extensions.ts';
import { Gateways } from './gateways.ts';
import type { FormState } from './form-state.ts';
import { List } from './list.ts';
import { SignIn } from './sign-in.ts';
import { Tools } from './tools.ts';
import { h, KeyRouteProvider, useKeyRoute, type Status } from './ui.ts';

/** The list is read again this often, so a change made elsewhere (a sign-in in a browser, another client) shows. */
const POLL_MS = 2_000;

type Mode =
  | { kind: 'list' }
  | { kind: 'form'; form: FormState }
  | { kind: 'sign-in'; name: string }
  | { kind: 'tools'; name: string }
  | { kind: 'gateways' }
  | { kind: 'acp' }
  | { kind: 'extensions' };

/** What the screen's owner reaches into the running app with: the client's news in, a quit (on a signal) out. */
interface Control {
  say(line: string): void;
  quit(): void;
}

/** The smallest terminal the screen draws in. */
const MIN_COLUMNS = 40;
const MIN_ROWS = 12;

/** What a too-small terminal shows; q quits (ctrl+c too, as everywhere: App's own keys). */
function TooSmall(): React.ReactElement {
  return h(
    React.Fragment,
    null,
    h(Text, { wrap: 'truncate-end' }, 'terminal too small'),
    h(Text, { wrap: 'truncate-end' }, `needs ${MIN_COLUMNS}×${MIN_ROWS} · q quits`),
  );
}

function App({ api, control }: { api: ScreenApi; control: Control }): React.ReactElement {
  const { exit } = useApp();
  const { columns, rows } = useWindowSize();
  const [servers, setServers] = useState<Server[] | null>(null);
  const [broken, setBroken] = useState(false);
  const [loadError, setLoadError] = useState<Problem | null>(null);
  const [selectedName, setSelectedName] = useState<string | null>(null);
  const [mode, setMode] = useState<Mode>({ kind: 'list' });
  const [status, setStatus] = useState<Status | null>(null);
  const pending = useRef<string | null>(null);
  const quitting = useRef(false);
  const reading = useRef<Promise<void> | null>(null);
  const lastIndex = useRef(0);

  useEffect(() => {
    // The client's own news (a daemon it had to start) goes to the status line: stderr would tear Ink's frame.
    control.say = (line) => setStatus({ tone: 'off', text: line.replace(/^albedo: /, '') });
    control.quit = quit;
  }, [control]);

  /** Reads the list; a read asked for while one is in flight starts after it (that one may predate the action just done). */
  const refresh = useCallback((): Promise<void> => {
    const read = (reading.current ?? Promise.resolve())
      .then(() => api.servers())
      .then(
        ({ servers: list, broken: b }) => {
          setServers(list);
          setBroken(b);
          setLoadError(null);
        },
        (err: unknown) => setLoadError(problemOf(err)),
      );
    reading.current = read;
    void read.finally(() => {
      if (reading.current === read) reading.current = null;
    });
    return read;
  }, [api]);

  useEffect(() => {
    void refresh();
    // The poll skips a beat while a read is in flight, so a slow daemon is not asked more and more.
    const t = setInterval(() => {
      if (!reading.current) void refresh();
    }, POLL_MS);
    return () => clearInterval(t);
  }, [refresh]);

  const quit = (): void => {
    if (quitting.current) return;
    quitting.current = true;
    // A sign-in in flight is cancelled first, so its callback listener does not outlive the screen.
    const name = pending.current;
    void (name ? api.cancel(name).catch(() => undefined) : Promise.resolve()).then(() => exit());
  };
  // A terminal too small to show the list or the form says so, rather than showing only the key hints (it redraws on
  // resize). The view stays, hidden, with what it holds (a form's typed fields, the tool selected, a page open) for
  // when the terminal grows again; meanwhile q quits and other keys are dropped.
  const small = !!((columns && columns < MIN_COLUMNS) || (rows && rows < MIN_ROWS));
  const smallNow = useRef(small);
  smallNow.current = small;
  // ctrl+c quits from every view; every other key goes to the view on screen.
  const route = useKeyRoute((input, key) => {
    if (key.ctrl && input === 'c') {
      quit();
      return true;
    }
    if (!smallNow.current) return false;
    if (input === 'q') quit();
    return true;
  });
  // One shape of tree either way, so the view is not made anew when the terminal shrinks or grows.
  const routed = (view: React.ReactElement): React.ReactElement =>
    h(
      KeyRouteProvider,
      { value: route },
      h(Box, { display: small ? 'none' : 'flex', flexDirection: 'column' }, view),
      small ? h(TooSmall) : null,
    );

  const list = servers ?? [];
  // The selection follows its server by name; when that one is gone (deleted), the row where it was.
  let selected = list.findIndex((s) => s.name === selectedName);
  if (selected < 0) selected = Math.max(0, Math.min(list.length - 1, lastIndex.current));
  lastIndex.current = selected;
  const move = (by: 1 | -1): void => {
    const i = Math.max(0, Math.min(list.length - 1, lastIndex.current + by));
    lastIndex.current = i;
    setSelectedName(list[i]?.name ?? null);
  };
  const back = (name: string | null, s: Status, saved?: Server): void => {
    if (name !== null) setSelectedName(name);
    // The server as the save answered it, at once (the list is read again right after).
    if (saved) {
      setServers((cur) =>
        cur?.some((x) => x.name === saved.name) ? cur.map((x) => (x.name === saved.name ? saved : x)) : [...(cur ?? []), saved],
      );
    }
    setStatus(s);
    setMode({ kind: 'list' });
    void refresh();
  };

  const width = Math.max(MIN_COLUMNS, columns || 80);
  const height = Math.max(MIN_ROWS, rows || 24);
  if (mode.kind === 'form') {
    return routed(
      h(Form, {
        api,
        initial: mode.form,
        width,
        height,
        onSaved: (name, s, saved) => back(name, s, saved),
        onCancel: () => setMode({ kind: 'list' }),
      }),
    );
  }
  if (mode.kind === 'sign-in') {
    const setPending = (n: string | null): void => {
      pending.current = n;
    };
    return routed(h(SignIn, { api, name: mode.name, width, height, onDone: (s) => back(mode.name, s), setPending }));
  }
  if (mode.kind === 'tools') {
    return routed(h(Tools, { api, name: mode.name, width, height, onBack: () => setMode({ kind: 'list' }), quit }));
  }
  if (mode.kind === 'gateways') return routed(h(Gateways, { api, width, height, onBack: () => setMode({ kind: 'list' }), quit }));
  if (mode.kind === 'acp') return routed(h(Acp, { api, width, height, onBack: () => setMode({ kind: 'list' }), quit }));
  if (mode.kind === 'extensions') return routed(h(Extensions, { api, width, height, onBack: () => setMode({ kind: 'list' }), quit }));
  return routed(
    h(List, {
      api,
      servers,
      broken,
      loadError,
      selected,
      selectedNow: () => lastIndex.current,
      move,
      status,
      setStatus,
      refresh,
      width,
      height,
      openForm: (form) => {
        setStatus(null);
        setMode({ kind: 'form', form });
      },
      openSignIn: (name) => setMode({ kind: 'sign-in', name }),
      openTools: (name) => {
        setStatus(null);
        setMode({ kind: 'tools', name });
      },
      openGateways: () => {
        setStatus(null);
        setMode({ kind: 'gateways' });
      },
      openAcp: () => {
        setStatus(null);
        setMode({ kind: 'acp' });
      },
      openExtensions: () => {
        setStatus(null);
        setMode({ kind: 'extensions' });
      },
      quit,
    }),
  );
}

const SIGNALS = { SIGTERM: 143, SIGHUP: 129 } as const;

/**
 * Runs the screen until the user quits (`q`, ctrl+c), on the alternate
 * screen (the terminal's own content is back afterwards); resolves with the
 * exit status: 0, or 143 / 129 when SIGTERM / SIGHUP ended it (a sign-in in
 * flight cancelled first, as on quit).
 */
export async function openScreen(): Promise<number> {
  let status = 0;
  const control: Control = { say: () => undefined, quit: () => undefined };
  const api = new ScreenApi((line) => control.say(line));
  const ink = render(h(App, { api, control }), { exitOnCtrlC: false, alternateScreen: true, interactive: true });
  const handlers = Object.entries(SIGNALS).map(([sig, code]) => {
    const on = (): void => {
      status = code;
      control.quit();
    };
    process.on(sig, on);
    return () => process.off(sig, on);
  });
  try {
    await ink.waitUntilExit();
  } finally {
    for (const off of handlers) off();
  }
  return status;
}
