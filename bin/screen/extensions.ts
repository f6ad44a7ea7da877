/**
 * `X` on the `/mcp` screen: the extensions, `mcp` (the configured servers'
 * tools) and `editor-mcp` (an editor's own servers, `albedo acp`), each
 * with its default for every session (`enabled` in extensions.json, read
 * and written through `GET`/`PATCH /v1/mcp`; `r` takes the key out of the
 * file: the built-in default, on). `s` picks one of the daemon's sessions:
 * then a switch changes that session only (`PATCH /v1/sessions/{id}`; `r`
 * gives it back to the default). Read again every two seconds, so a change
 * made elsewhere shows. esc goes back one step, q quits.
 */
import React, { useCallback, useEffect, useRef, useState } from 'react';
import { Box, Text } from 'ink';
import { EXTENSIONS, isAcp, switchLabel } from '../../web/shared/acp.js';
import { cell } from '../client/output.ts';
import { problemOf, type ExtensionDefaults, type ExtensionName, type ScreenApi, type SessionInfo } from './api.ts';
import { col, last, POLL_MS } from './cells.ts';
import { COLOR, h, Spinner, StatusLine, useKeys, useLatest, type Status } from './ui.ts';

export interface ExtensionsProps {
  api: ScreenApi;
  width: number;
  height: number;
  onBack(): void;
  quit(): void;
}

const EXT_W = 11;
const SWITCH_W = 9;

type Scope = { kind: 'all' } | { kind: 'pick' } | { kind: 'session'; id: string };

const fail = (what: string, err: unknown): Status => {
  const p = problemOf(err);
  return { tone: 'error', text: `${what}: ${p.code}: ${p.message}` };
};

/** A session as the view names it: its id's first eight characters, and `acp` for an ACP session. */
const shortId = (s: { id: string; label?: string }): string => `${cell(s.id.slice(0, 8), 8)}${isAcp(s) ? ' (acp)' : ''}`;

export function Extensions(p: ExtensionsProps): React.ReactElement {
  const [defaults, setDefaults] = useState<{ enabled: ExtensionDefaults; broken: boolean } | null>(null);
  const [sessions, setSessions] = useState<SessionInfo[] | null>(null);
  const [status, setStatus] = useState<Status | null>(null);
  const [scope, setScope, scopeNow] = useLatest<Scope>({ kind: 'all' });
  const [row, setRow, rowNow] = useLatest(0);
  const [pickRow, setPickRow, pickNow] = useLatest(0);
  const [busy, setBusy, busyNow] = useLatest<string | null>(null);
  const reading = useRef<Promise<void> | null>(null);

  /** Reads the defaults and the sessions; one asked for while a read is in flight starts after it (that one may predate a write). */
  const read = useCallback((): Promise<void> => {
    const next = (reading.current ?? Promise.resolve())
      .then(() => Promise.all([p.api.extensionDefaults(), p.api.sessions()]))
      .then(
        ([d, s]) => {
          setDefaults(d);
          setSessions(s);
        },
        (err: unknown) => setStatus(fail('cannot read the extensions', err)),
      );
    reading.current = next;
    void next.finally(() => {
      if (reading.current === next) reading.current = null;
    });
    return next;
  }, [p.api]);
  useEffect(() => {
    void read();
    // The poll skips a beat while a read is in flight, so a slow daemon is not asked more and more.
    const t = setInterval(() => {
      if (!reading.current) void read();
    }, POLL_MS);
    return () => clearInterval(t);
  }, [read]);

  const list = sessions ?? [];
  const current = scope.kind === 'session' ? list.find((s) => s.id === scope.id) : undefined;

  /** Writes one switch with a spinner, then reads everything again. */
  const write = (spinner: string, done: string, failed: string, run: () => Promise<unknown>): void => {
    setBusy(spinner);
    setStatus(null);
    run()
      .then(
        (): Status => ({ tone: 'ok', text: done }),
        (err: unknown) => fail(failed, err),
      )
      .then(async (s) => {
        await read();
        setBusy(null);
        setStatus(s);
      });
  };

  useKeys((input, key) => {
    if (key.ctrl || busyNow.current) return;
    if (input === 'q') return p.quit();
    const sc = scopeNow.current;
    if (sc.kind === 'pick') {
      if (key.escape) return setScope({ kind: 'all' });
      if (key.upArrow || input === 'k') return setPickRow(Math.max(0, pickNow.current - 1));
      if (key.downArrow || input === 'j') return setPickRow(Math.max(0, Math.min(list.length - 1, pickNow.current + 1)));
      const s = list[pickNow.current];
      if (key.return && s) {
        setStatus(null);
        setScope({ kind: 'session', id: s.id });
      }
      return;
    }
    if (key.escape) {
      setStatus(null);
      return sc.kind === 'session' ? setScope({ kind: 'all' }) : p.onBack();
    }
    if (key.upArrow || input === 'k') return setRow(0);
    if (key.downArrow || input === 'j') return setRow(EXTENSIONS.length - 1);
    if (input === 's') {
      if (!list.length) return setStatus({ tone: 'off', text: 'no session is open: nothing to pick' });
      setStatus(null);
      setPickRow(Math.max(0, sc.kind === 'session' ? list.findIndex((s) => s.id === sc.id) : 0));
      return setScope({ kind: 'pick' });
    }
    const name = EXTENSIONS[rowNow.current]![0] as ExtensionName;
    const toggle = input === ' ' || key.return;
    if (!toggle && input !== 'r') return;
    if (sc.kind === 'all') {
      if (!defaults) return;
      const on = toggle ? !defaults.enabled[name] : null;
      const words = on === null ? 'back to the built-in default (on)' : `switched ${on ? 'on' : 'off'}`;
      write(`saving the default of ${name}…`, `${name}: ${words} for every session`, `${name} was not changed`, () =>
        p.api.setDefault(name, on),
      );
      return;
    }
    const s = list.find((x) => x.id === sc.id);
    if (!s?.extensions) return setStatus({ tone: 'off', text: 'that session is gone: s picks another' });
    const on = toggle ? !s.extensions[name].effective : null;
    const words = on === null ? 'the default decides again' : `switched ${on ? 'on' : 'off'}`;
    write(`switching ${name} for the session…`, `${name}: ${words} for session ${shortId(s)}`, `${name} was not changed`, () =>
      p.api.setSessionExtension(s.id, name, on),
    );
  });

  const inner = Math.max(30, p.width - 2);
  const mark = (sel: boolean): React.ReactElement => h(Box, { flexShrink: 0 }, h(Text, { color: COLOR.busy }, sel ? '› ' : '  '));
  const sw = (on: boolean): React.ReactElement => {
    const l = switchLabel(on);
    return col(SWITCH_W, `${l.symbol} ${l.text}`, l.tone);
  };

  let title: string;
  let body: React.ReactElement;
  let keys: string;
  if (scope.kind === 'pick') {
    title = 'pick a session';
    keys = '↑↓/jk select · enter choose · esc back · q quit';
    const room = Math.max(1, p.height - 10);
    const first = Math.min(Math.max(0, pickRow - room + 1), Math.max(0, list.length - room));
    body = !list.length
      ? h(Text, { color: COLOR.off }, 'No session is open.')
      : h(
          Box,
          { flexDirection: 'column' },
          h(Box, null, mark(false), col(38, 'SESSION', 'off'), col(6, 'KIND', 'off'), col(14, 'PROFILE', 'off'), last('TOOLS', 'off')),
          ...list
            .slice(first, first + room)
            .map((s, k) =>
              h(
                Box,
                { key: s.id },
                mark(first + k === pickRow),
                col(38, cell(s.id, 38), undefined, first + k === pickRow),
                col(6, isAcp(s) ? 'acp' : '—'),
                col(14, cell(s.profile, 14)),
                last(String(s.tools)),
              ),
            ),
          list.length > room
            ? h(Text, { dimColor: true }, `  ${first + 1}–${Math.min(list.length, first + room)} of ${list.length}`)
            : null,
        );
  } else if (scope.kind === 'session') {
    title = current ? `session ${shortId(current)} only` : 'a session that is gone';
    keys = '↑↓/jk select · space switch for this session · r the default again · s another session · esc every session · q quit';
    body =
      !current || !current.extensions
        ? h(Text, { color: COLOR.warn }, '! this session is closed: s picks another, esc goes back')
        : h(
            Box,
            { flexDirection: 'column' },
            h(
              Box,
              null,
              mark(false),
              col(EXT_W, 'EXTENSION', 'off'),
              col(SWITCH_W, 'CHOSEN', 'off'),
              col(SWITCH_W, 'IN FORCE', 'off'),
              last('BRINGS', 'off'),
            ),
            ...EXTENSIONS.map(([name, brings], k) => {
              const x = current.extensions![name];
              return h(
                Box,
                { key: name },
                mark(k === row),
                col(EXT_W, name, undefined, k === row),
                x.chosen === null ? col(SWITCH_W, 'default', 'off') : sw(x.chosen),
                sw(x.effective),
                last(brings, 'off'),
              );
            }),
          );
  } else {
    title = 'for every session';
    keys = '↑↓/jk select · space switch · r built-in default (on) · s one session · esc back · q quit';
    body = !defaults
      ? h(Spinner, { text: 'asking the daemon…' })
      : h(
          Box,
          { flexDirection: 'column' },
          h(Box, null, mark(false), col(EXT_W, 'EXTENSION', 'off'), col(SWITCH_W, 'DEFAULT', 'off'), last('BRINGS', 'off')),
          ...EXTENSIONS.map(([name, brings], k) =>
            h(Box, { key: name }, mark(k === row), col(EXT_W, name, undefined, k === row), sw(defaults.enabled[name]), last(brings, 'off')),
          ),
        );
  }

  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true, wrap: 'truncate-end' }, 'Extensions', h(Text, { dimColor: true }, `  ${title}`)),
    defaults?.broken
      ? h(Text, { color: COLOR.warn, wrap: 'truncate-end' }, '! extensions.json is broken: the defaults shown are the last valid ones')
      : null,
    h(Box, { marginTop: 1, flexDirection: 'column' }, body),
    h(Box, { marginTop: 1, flexDirection: 'column' }, busy ? h(Spinner, { text: busy }) : h(StatusLine, { status, width: inner })),
    h(Box, { marginTop: 1 }, h(Text, { dimColor: true, wrap: 'wrap' }, keys)),
  );
}
