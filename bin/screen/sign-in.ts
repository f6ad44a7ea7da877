/**
 * ctrl+l on the `/mcp` screen: an OAuth sign-in to an http server, run by the
 * daemon (`PUT /v1/auth/logins/mcp:{name}`; docs/design.md, "Sign-in"). The
 * screen shows the authorization URL either way and opens the browser unless
 * `ALBEDO_NO_BROWSER` is set (as `albedo mcp sign-in --open` does: through a
 * redirect page, detached, no shell; the page goes when the sign-in is over),
 * then waits — polling `GET` — for the daemon's loopback callback, or for the
 * callback URL pasted here (`POST …/callback`: one that is not this sign-in's
 * is refused and the sign-in keeps waiting). esc cancels the sign-in in
 * flight (`DELETE`).
 */
import React, { useEffect, useRef, useState } from 'react';
import { Box, Text, usePaste } from 'ink';
import { safe } from '../client/output.ts';
import { openBrowser } from '../client/browser.ts';
import { problemOf, type Login, type ScreenApi } from './api.ts';
import { editText, printable, textAt, view, type TextState } from './text-input.ts';
import { COLOR, h, Lines, Spinner, useKeys, useLatest, wrapLines, type Status } from './ui.ts';

const POLL_MS = 1_000;

export interface SignInProps {
  api: ScreenApi;
  name: string;
  width: number;
  height: number;
  /** The sign-in is over (signed in, failed, cancelled): the result in words. */
  onDone(status: Status): void;
  /** The name of the sign-in pending in the daemon, or null: quitting the screen cancels it. */
  setPending(name: string | null): void;
}

type Phase = 'starting' | 'waiting' | 'cancelling';
type Opened = 'yes' | 'no' | 'off' | null;

// The account is always said: a sign-in completed by someone else's account must not pass unnoticed.
const done = (name: string, l: Login): Status =>
  l.state === 'completed'
    ? {
        tone: 'ok',
        text: l.auth?.account
          ? `signed in to ${name} as ${l.auth.account}`
          : `signed in to ${name} (the authorization server named no account)`,
      }
    : {
        tone: 'error',
        text: `the sign-in to ${name} failed: ${l.error?.code ?? 'ALBEDO_SIGN_IN_FAILED'}: ${l.error?.message ?? 'no reason given'}`,
      };

export function SignIn({ api, name, width, height, onDone, setPending }: SignInProps): React.ReactElement {
  const [phase, setPhase, phaseNow] = useLatest<Phase>('starting');
  const [url, setUrl] = useState<string | null>(null);
  const [opened, setOpened] = useState<Opened>(null);
  const [paste, setPaste, pasteNow] = useLatest<TextState>(textAt());
  const [sending, setSending, sendingNow] = useLatest(false);
  const [pasteError, setPasteError] = useState<string | null>(null);
  // Once over (or unmounted), late answers of a poll or a paste are dropped.
  const over = useRef(false);
  // The redirect page the browser was opened on: removed once the sign-in is over.
  const page = useRef<() => void>(() => {});
  const finish = (s: Status): void => {
    if (over.current) return;
    over.current = true;
    page.current();
    setPending(null);
    onDone(s);
  };
  const cancelled = (): Status => ({ tone: 'off', text: `the sign-in to ${name} was cancelled` });
  const cancel = (): void => {
    api.cancel(name).then(
      () => finish(cancelled()),
      (err: unknown) => finish({ tone: 'error', text: `cancelling the sign-in to ${name}: ${problemOf(err).message}` }),
    );
  };

  useEffect(() => {
    let timer: NodeJS.Timeout | undefined;
    const poll = async (): Promise<void> => {
      const l = await api.login(name).catch(() => undefined);
      if (over.current) return;
      if (l === null) return finish({ tone: 'warn', text: `the sign-in to ${name} was cancelled elsewhere` });
      if (l && l.state !== 'pending') return finish(done(name, l));
      timer = setTimeout(() => void poll(), POLL_MS);
    };
    // Pending from now: quitting while the daemon starts it cancels it too.
    setPending(name);
    api.signIn(name).then(
      async (l) => {
        if (over.current) return;
        // esc while the daemon was starting it: cancelled now that there is something to cancel.
        if (phaseNow.current === 'cancelling') return l.state === 'pending' ? cancel() : finish(cancelled());
        if (l.state !== 'pending') return finish(done(name, l));
        if (!l.authorizationUrl) return finish({ tone: 'error', text: `the daemon did not answer with an authorization URL for ${name}` });
        setUrl(l.authorizationUrl);
        setPhase('waiting');
        if (process.env.ALBEDO_NO_BROWSER) setOpened('off');
        else {
          const o = await openBrowser(api.home, l.authorizationUrl, { text: 'Continue to the sign-in' });
          page.current = o.remove;
          if (over.current) o.remove();
          setOpened(o.opened ? 'yes' : 'no');
        }
        timer = setTimeout(() => void poll(), POLL_MS);
      },
      (err: unknown) => {
        const p = problemOf(err);
        finish(
          phaseNow.current === 'cancelling' ? cancelled() : { tone: 'error', text: `cannot sign in to ${name}: ${p.code}: ${p.message}` },
        );
      },
    );
    return () => {
      over.current = true;
      page.current();
      clearTimeout(timer);
    };
  }, []);

  const send = (text: string): void => {
    const pasted = text.trim();
    if (!pasted || sendingNow.current) return;
    setSending(true);
    setPasteError(null);
    api.paste(name, pasted).then(
      (l) => finish(done(name, l)),
      (err: unknown) => {
        const p = problemOf(err);
        setSending(false);
        setPaste(textAt());
        setPasteError(`${p.code}: ${p.message} (still waiting)`);
      },
    );
  };

  useKeys((input, key) => {
    const phase = phaseNow.current;
    if (phase === 'cancelling' || (key.ctrl && input === 'c')) return;
    if (key.escape) {
      setPhase('cancelling');
      // While the daemon is still starting it, the answer to that does the cancelling (above).
      if (phase === 'waiting') cancel();
      return;
    }
    if (phase !== 'waiting') return;
    if (key.return) return send(pasteNow.current.text);
    const next = editText(pasteNow.current, input, key);
    if (next) setPaste(next);
  });
  usePaste((text) => {
    if (phaseNow.current !== 'waiting') return;
    const typed = printable(text);
    const t = pasteNow.current;
    setPaste({ text: t.text.slice(0, t.cursor) + typed + t.text.slice(t.cursor), cursor: t.cursor + typed.length });
  });

  const inner = Math.max(20, width - 2);
  const intro =
    opened === 'yes'
      ? 'Opened in your browser. If it did not open, open this URL:'
      : opened === 'no'
        ? 'No browser could be opened here. Open this URL in a browser:'
        : 'Open this URL in a browser to sign in:';
  const field = view(paste.text, paste.cursor, inner - 2);
  const urlRows = Math.max(3, Math.min(12, height - 16));
  return h(
    Box,
    { flexDirection: 'column', paddingX: 1 },
    h(Text, { bold: true }, `Sign in to ${safe(name)}`),
    !url
      ? h(Box, { marginTop: 1 }, h(Spinner, { text: phase === 'cancelling' ? 'cancelling…' : 'asking the daemon to start the sign-in…' }))
      : null,
    url
      ? h(
          Box,
          { flexDirection: 'column', marginTop: 1 },
          h(Text, null, intro),
          h(Box, { flexDirection: 'column', marginTop: 1 }, h(Lines, { lines: wrapLines(url, inner, urlRows), tone: 'busy' })),
          h(
            Box,
            { marginTop: 1 },
            phase === 'cancelling'
              ? h(Spinner, { text: 'cancelling…' })
              : h(Spinner, { text: sending ? 'sending the pasted URL…' : 'waiting for the browser…' }),
          ),
          h(
            Box,
            { marginTop: 1 },
            h(
              Text,
              { wrap: 'wrap' },
              'Browser on another machine? Paste the URL it was sent to (the page that did not load) and press enter:',
            ),
          ),
          h(Text, null, h(Text, { color: COLOR.busy }, '› '), field.before, h(Text, { inverse: true }, field.at), field.after),
          pasteError ? h(Lines, { lines: wrapLines(`✗ ${pasteError}`, inner, 3), tone: 'error' }) : null,
        )
      : null,
    h(Box, { marginTop: 1 }, h(Text, { dimColor: true }, 'enter sends the pasted URL · esc cancels the sign-in')),
  );
}
