// `albedo mcp sign-in|sign-out NAME` in a real terminal against the real
// daemon and a real authorization server (oidc-provider, the OAuth tests'
// stack) with the browser stand-in (issue 11, item 3): the authorization URL
// is printed (nothing opened), the loopback callback or a pasted callback
// URL completes it, Ctrl-C cancels the pending sign-in, --no-wait leaves it
// pending; a call before the sign-in exits 5.
import t from 'tap';
import pty from 'node-pty';
import { NODE, ROOT, newTag, tempHome, until } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn, redirectOnly } from '../fixtures/browser.ts';
import { BIN, sdkServer, srv, startDaemon } from '../daemon/harness.ts';
import { errorCode, screenJson, term } from './cli-harness.ts';

t.setTimeout(170_000);

const login = (name: string): string => `/v1/auth/logins/mcp:${encodeURIComponent(name)}`;

t.test('sign in, sign out, sign in by a pasted URL, cancel with Ctrl-C', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const opts = { cols: 400, rows: 50, cwd: ROOT, env: { ...process.env, ALBEDO_HOME: e.home } as Record<string, string> };
  const urlIn = (screen: string): string | undefined => new RegExp(`(${stack.issuer}/auth\\?\\S+)`).exec(screen.replace(/\n/g, ' '))?.[1];
  t.equal((await d.call('PUT', srv('secure'), { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } })).status, 201);
  t.equal((await d.call('PUT', srv('sdk'), { body: sdkServer() })).status, 201);

  const before = await term(e, ['call', 'secure/whoami']);
  t.equal(before.code, 5, 'a call that needs a sign-in exits 5');
  t.equal(errorCode(before.screen), 'ALBEDO_NEEDS_SIGN_IN');

  // The loopback callback: the browser stand-in follows the URL the command printed.
  const p = pty.spawn(NODE, [BIN, 'mcp', 'sign-in', 'secure', '--json'], opts);
  let screen = '';
  let opened = false;
  p.onData((chunk) => {
    screen += chunk.replace(/\r\n/g, '\n');
    const url = urlIn(screen);
    if (url && !opened) {
      opened = true;
      void browserStandIn(url);
    }
  });
  const code = await new Promise<number>((r) => p.onExit(({ exitCode }) => r(exitCode)));
  t.equal(code, 0, screen);
  t.ok(opened, 'the authorization URL was printed');
  const done = JSON.parse(screen.slice(screen.lastIndexOf('\n{\n') + 1));
  t.match(done, { server: 'secure', state: 'completed', auth: { state: 'signed_in', account: 'alice' } });
  t.match((await d.call('GET', srv('secure'))).body, { auth: { state: 'signed_in' } });

  const out = await term(e, ['mcp', 'sign-out', 'secure', '--json']);
  t.equal(out.code, 0, out.screen);
  t.match(screenJson(out), { saved: true, check: { result: 'needs_sign_in' }, server: { auth: { state: 'signed_out' } } });

  // A pasted callback URL (the browser is elsewhere): the stand-in only follows the redirects.
  let pasted = false;
  const byPaste = await new Promise<{ code: number; screen: string }>((resolve) => {
    const q = pty.spawn(NODE, [BIN, 'mcp', 'sign-in', 'secure'], opts);
    let s = '';
    q.onData((chunk) => {
      s += chunk.replace(/\r\n/g, '\n');
      const url = urlIn(s);
      if (url && !pasted && /paste/.test(s)) {
        pasted = true;
        void redirectOnly(url).then(({ callbackUrl }) => q.write(`${callbackUrl}\r`));
      }
    });
    q.onExit(({ exitCode }) => resolve({ code: exitCode, screen: s }));
  });
  t.equal(byPaste.code, 0, byPaste.screen);
  t.ok(pasted, 'the callback URL was pasted');
  t.match((await d.call('GET', srv('secure'))).body, { auth: { state: 'signed_in' } });
  await term(e, ['mcp', 'sign-out', 'secure']);

  // --no-wait: the URL, and the sign-in stays pending in the daemon.
  const noWait = await term(e, ['mcp', 'sign-in', 'secure', '--no-wait', '--json']);
  t.equal(noWait.code, 0);
  t.match(screenJson(noWait), { server: 'secure', state: 'pending', authorizationUrl: String });
  t.match((await d.call('GET', login('secure'))).body, { state: 'pending' });

  // Ctrl-C while waiting: the pending sign-in is cancelled and forgotten.
  const cancelled = await new Promise<number>((resolve) => {
    const q = pty.spawn(NODE, [BIN, 'mcp', 'sign-in', 'secure'], opts);
    let s = '';
    let sent = false;
    q.onData((chunk) => {
      s += chunk;
      if (!sent && /paste/.test(s)) {
        sent = true;
        q.write('\x03');
      }
    });
    q.onExit(({ exitCode }) => resolve(exitCode));
  });
  t.equal(cancelled, 130, 'exit 130 after Ctrl-C');
  await until(async () => (await d.call('GET', login('secure'))).status === 404, 30_000, 'the sign-in to be forgotten');

  const stdio = await term(e, ['mcp', 'sign-in', 'sdk']);
  t.equal(stdio.code, 2, 'a stdio server does not sign in');
  t.equal(errorCode(stdio.screen), 'ALBEDO_INVALID_ARGUMENT');
  const unknown = await term(e, ['mcp', 'sign-in', 'nowhere']);
  t.equal(unknown.code, 4);
});
