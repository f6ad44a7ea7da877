// `albedo open` (issue 12 item 2): asks the daemon — started if none runs,
// like every command — for a one-time login link, prints it, and opens it
// with the desktop's opener unless ALBEDO_NO_BROWSER is set; an opener that
// cannot start is news, not a failure. The link it prints logs a browser in.
import t from 'tap';
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { request } from 'undici';
import { newTag, tempDir, tempHome, until } from '../helpers.ts';
import { piped, stopDaemonAtTeardown, type CliEnv } from '../cli/cli-harness.ts';
import { startDaemon } from './harness.ts';

t.setTimeout(170_000);

/** Visits a login link (one GET, as a browser's first step): its status, the cookie it set and the token the redirect carries. */
async function logIn(url: string): Promise<{ status: number; cookie: string | undefined; csrf: string }> {
  const r = await request(url);
  await r.body.text();
  const set = r.headers['set-cookie'];
  const csrf = /#k=([A-Za-z0-9_-]+)$/.exec(String(r.headers.location ?? ''))?.[1] ?? '';
  return { status: r.statusCode, cookie: typeof set === 'string' ? set.split(';')[0] : undefined, csrf };
}

/** Whether a login works: a read of the API by its cookie and token. */
async function works(url: string, login: { cookie?: string; csrf: string }): Promise<boolean> {
  const r = await request(new URL('/v1/mcp/servers', url), { headers: { cookie: login.cookie ?? '', 'x-albedo-csrf': login.csrf } });
  await r.body.text();
  return r.statusCode === 200;
}

const LINK = /^http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[A-Za-z0-9_-]{43,}$/;

t.test('with ALBEDO_NO_BROWSER and no daemon running: one is started, and the link printed logs in', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag(), env: { ALBEDO_NO_BROWSER: '1' } };
  stopDaemonAtTeardown(t, e);
  const r = await piped(e, ['open']);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.equal(lines.length, 1, 'one line on stdout');
  t.match(lines[0], LINK, 'the link');
  t.match(r.stderr, /started one/, 'the daemon was started (news on stderr)');
  const login = await logIn(lines[0]!);
  t.equal(login.status, 303, 'it logs in');
  t.ok(login.cookie && (await works(lines[0]!, login)), 'and the cookie works');
  const log = readFileSync(path.join(e.home, 'daemon.log'), 'utf8');
  t.match(log, /web pane: run `albedo open`/, 'the started daemon says how to get a link…');
  t.notMatch(log, /code=/, '…and writes none to its log');
  t.equal((await logIn(lines[0]!)).status, 403, 'once');

  const j = await piped(e, ['open', '--json']);
  t.equal(j.code, 0, j.stderr);
  const out = JSON.parse(j.stdout);
  t.same(Object.keys(out).sort(), ['expiresAt', 'opened', 'url']);
  t.match(out, { url: LINK, opened: false });
  t.ok(Date.parse(out.expiresAt) > Date.now(), 'expiresAt ahead');
  t.equal((await logIn(out.url)).status, 303, 'the --json link logs in too');
});

t.test('without ALBEDO_NO_BROWSER: the desktop opener gets the link; one that cannot start is only news', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  await startDaemon(t, home, { tag });
  const bin = tempDir(t, 'albedo-opener-');
  const got = path.join(bin, 'opened.txt');
  const opener = path.join(bin, process.platform === 'darwin' ? 'open' : 'xdg-open');
  writeFileSync(opener, `#!/bin/sh\nprintf '%s\\n' "$@" > '${got}.tmp' && mv '${got}.tmp' '${got}'\n`);
  chmodSync(opener, 0o755);
  const e: CliEnv = { home, tag, env: { ALBEDO_NO_BROWSER: '', PATH: `${bin}:${process.env.PATH}` } };

  const r = await piped(e, ['open', '--json']);
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.match(out, { url: LINK, opened: true });
  await until(() => existsSync(got), 30_000, 'the opener to run');
  // Not the link itself (a login code in an argument vector is readable by every user in /proc): a page of the user's own.
  const arg = readFileSync(got, 'utf8').trim();
  t.match(arg, /^file:\/\/\/.*\/ui-open\/[0-9a-f]{24}\.html$/, 'the opener got one argument: a file:// page in the home');
  t.notMatch(arg, /code=/, 'no login code in its arguments');
  const page = fileURLToPath(arg);
  t.equal(statSync(page).mode & 0o777, 0o600, "the page is the user's alone");
  const html = readFileSync(page, 'utf8');
  t.ok(html.includes(`content="0;url=${out.url}"`), 'it sends the browser on to the link');
  t.equal((await logIn(out.url)).status, 303, 'and the link logs in');

  rmSync(got);
  const text = await piped(e, ['open']);
  t.equal(text.code, 0);
  t.match(text.stdout.trim(), LINK, 'the link is printed as well');
  await until(() => existsSync(got), 30_000, 'the opener to run');
  t.ok(
    readFileSync(fileURLToPath(readFileSync(got, 'utf8').trim()), 'utf8').includes(text.stdout.trim()),
    'the printed link is the one opened',
  );

  const none = await piped({ ...e, env: { ALBEDO_NO_BROWSER: '', PATH: tempDir(t, 'albedo-empty-') } }, ['open', '--json']);
  t.equal(none.code, 0, 'no opener: not a failure');
  t.match(JSON.parse(none.stdout), { url: LINK, opened: false });
  t.ok(none.stderr.trim().length > 0, 'a note on stderr');
});
