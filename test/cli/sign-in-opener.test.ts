// Sign-in URLs out of argument vectors (issue 20 item 2): `albedo mcp
// sign-in --open` and `albedo probe --sign-in` run the desktop's opener (a
// stand-in xdg-open on PATH that records its argv) against the OAuth tests'
// real authorization server. An argv is readable by every local user in
// /proc, so no element may hold the authorization URL, its `state` or its
// PKCE challenge: the opener gets the file:// address of a page (0600) that
// holds the URL, removed once the command is over. The account signed in to
// is shown after the sign-in.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE, newTag, tempHome, until } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn } from '../fixtures/browser.ts';
import { BIN, srv, startDaemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

const stack = await startOAuthStack();
t.teardown(() => stack.close());

/** A directory for PATH with a stand-in opener that writes its arguments, one a line, to `argv.txt` there. */
function openerStub(t: { teardown(fn: () => unknown): void }): { bin: string; argv: () => string[] | null } {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'albedo-opener-'));
  t.teardown(() => rmSync(bin, { recursive: true, force: true }));
  const got = path.join(bin, 'argv.txt');
  const script = `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > '${got}.tmp' && mv '${got}.tmp' '${got}'\n`;
  for (const name of ['xdg-open', 'open']) {
    writeFileSync(path.join(bin, name), script);
    chmodSync(path.join(bin, name), 0o755);
  }
  return { bin, argv: () => (existsSync(got) ? readFileSync(got, 'utf8').trimEnd().split('\n') : null) };
}

interface Run {
  code: Promise<number | null>;
  out: () => string;
  child: ChildProcess;
}

/**
 * How a run ended, as a shell sees it: the exit code, or 128 + the signal's
 * number when a signal ended it (the CLI exits 143/129 itself, or lets the
 * signal end it where another listener re-raises it: signal-exit, which the
 * test runner's NODE_OPTIONS and some libraries load).
 */
function shellStatus(child: ChildProcess): Promise<number> {
  const nums: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return new Promise((r) => child.once('exit', (c, sig) => r(c ?? 128 + (nums[sig!] ?? 0))));
}

function run(args: string[], env: Record<string, string | undefined>): Run {
  const child = spawn(NODE, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  return { code: new Promise((r) => child.on('exit', (c) => r(c))), out: () => out, child };
}

const urlIn = (text: string): string | undefined => new RegExp(`(${stack.issuer}/auth\\?\\S+)`).exec(text)?.[1];

/** What the opener was given, checked: no secret of the authorization URL, one file:// page, 0600, holding the URL. */
function checkOpened(t: Test, argv: string[], url: string): string {
  const u = new URL(url);
  const state = u.searchParams.get('state')!;
  const challenge = u.searchParams.get('code_challenge')!;
  t.ok(state && challenge, 'the authorization URL has a state and a PKCE challenge');
  for (const a of argv) {
    t.notOk(a.includes(url) || a.includes(u.search), 'no argument holds the authorization URL');
    t.notOk(a.includes(state), 'no argument holds the state');
    t.notOk(a.includes(challenge), 'no argument holds the PKCE challenge');
  }
  const args = argv.slice(1);
  t.equal(args.length, 1, 'one argument');
  t.match(args[0], /^file:\/\/\//, 'a file:// page');
  const page = fileURLToPath(args[0]!);
  t.equal(statSync(page).mode & 0o777, 0o600, "the page is the user's alone");
  t.equal(statSync(path.dirname(page)).mode & 0o077, 0, 'in a directory no other user may enter');
  t.ok(readFileSync(page, 'utf8').includes(`url=${url.replace(/&/g, '&amp;')}"`), 'it sends the browser on to the URL');
  return page;
}

t.test('albedo mcp sign-in --open', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  t.equal((await d.call('PUT', srv('secure'), { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } })).status, 201);
  const stub = openerStub(t);
  const r = run(['mcp', 'sign-in', 'secure', '--open'], {
    ALBEDO_HOME: home,
    ALBEDO_NO_BROWSER: '',
    PATH: `${stub.bin}:${process.env.PATH}`,
  });
  await until(() => !!urlIn(r.out()) && stub.argv() !== null, 60_000, 'the URL printed and the opener run');
  const url = urlIn(r.out())!;
  const page = checkOpened(t, stub.argv()!, url);
  t.ok(page.startsWith(path.join(home, 'ui-open') + path.sep), "in the home's ui-open directory");
  await browserStandIn(url);
  t.equal(await r.code, 0, r.out());
  t.match(r.out(), /signed in to secure as alice/, 'the account signed in to is shown');
  t.notOk(existsSync(page), 'the page is gone once the sign-in is over');
});

t.test('albedo probe --sign-in', async (t) => {
  const home = tempHome(t);
  const stub = openerStub(t);
  const r = run(['probe', '--url', stack.mcpUrl, '--name', 'cli', '--sign-in'], {
    ALBEDO_HOME: home,
    ALBEDO_NO_BROWSER: '',
    PATH: `${stub.bin}:${process.env.PATH}`,
  });
  await until(() => !!urlIn(r.out()) && stub.argv() !== null, 60_000, 'the URL printed and the opener run');
  const url = urlIn(r.out())!;
  const page = checkOpened(t, stub.argv()!, url);
  await browserStandIn(url);
  t.equal(await r.code, 0, r.out());
  t.match(r.out(), /signed in to cli as alice/, 'the account signed in to is shown');
  t.notOk(existsSync(page), 'the page is gone once the probe is over');
});

t.test('albedo mcp sign-in --open killed while it waits (SIGTERM, SIGHUP): the page goes, the conventional status', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  t.equal((await d.call('PUT', srv('secure'), { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } })).status, 201);
  for (const [sig, status] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    const stub = openerStub(t);
    const r = run(['mcp', 'sign-in', 'secure', '--open'], {
      ALBEDO_HOME: home,
      ALBEDO_NO_BROWSER: '',
      PATH: `${stub.bin}:${process.env.PATH}`,
    });
    await until(() => !!urlIn(r.out()) && stub.argv() !== null, 60_000, 'the URL printed and the opener run');
    const page = checkOpened(t, stub.argv()!, urlIn(r.out())!);
    const ended = shellStatus(r.child);
    r.child.kill(sig);
    t.equal(await ended, status, `${sig}: status ${status}`);
    t.notOk(existsSync(page), `${sig}: the page is gone`);
  }
});

t.test(
  'albedo probe --sign-in killed while it waits (SIGHUP, SIGTERM): the page goes; old page directories of ours are swept',
  async (t) => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'albedo-tmpdir-'));
    t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
    chmodSync(tmp, 0o1777);
    const old = new Date(Date.now() - 60 * 60_000);
    const stale = path.join(tmp, 'albedo-sign-in-stale1');
    mkdirSync(stale, { mode: 0o700 });
    writeFileSync(path.join(stale, 'sign-in.html'), 'old', { mode: 0o600 });
    utimesSync(stale, old, old);
    const recent = path.join(tmp, 'albedo-sign-in-recent');
    mkdirSync(recent, { mode: 0o700 });
    const others = path.join(tmp, 'albedo-sign-in-others');
    mkdirSync(others, { mode: 0o700 });
    chownSync(others, 65534, 65534);
    utimesSync(others, old, old);

    for (const [sig, status] of [
      ['SIGHUP', 129],
      ['SIGTERM', 143],
    ] as const) {
      const home = tempHome(t);
      const stub = openerStub(t);
      const r = run(['probe', '--url', stack.mcpUrl, '--name', 'cli', '--sign-in'], {
        ALBEDO_HOME: home,
        ALBEDO_NO_BROWSER: '',
        TMPDIR: tmp,
        PATH: `${stub.bin}:${process.env.PATH}`,
      });
      await until(() => !!urlIn(r.out()) && stub.argv() !== null, 60_000, 'the URL printed and the opener run');
      const page = checkOpened(t, stub.argv()!, urlIn(r.out())!);
      t.ok(page.startsWith(tmp + path.sep), 'in the temporary directory');
      const ended = shellStatus(r.child);
      r.child.kill(sig);
      t.equal(await ended, status, `${sig}: status ${status}`);
      t.notOk(existsSync(path.dirname(page)), `${sig}: the page and its directory are gone`);
    }
    t.notOk(existsSync(stale), 'an old page directory of ours was swept');
    t.ok(existsSync(recent), 'a recent one is left (a sign-in may be using it)');
    t.ok(existsSync(others), "another user's is left alone");
  },
);
