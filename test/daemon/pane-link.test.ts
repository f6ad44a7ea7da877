// The web pane's login link at `albedo daemon`'s start (issue 20 item 3): a
// live login code opens the pane (and through it, adding a stdio server runs
// a command as the user), so it is printed only when stderr is a terminal.
// With stderr redirected to a file (a service manager's journal, `> log
// 2>&1`) the file holds no code, only how to get one (`albedo open`); on a
// real pseudo-terminal the link is printed and logs a browser in once;
// ALBEDO_NO_PANE_LINK keeps it off a terminal too.
import t from 'tap';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { request } from 'undici';
import { NODE, ROOT, newTag, tempHome, until } from '../helpers.ts';
import { BIN } from './harness.ts';

t.setTimeout(120_000);

const LISTENING = /albedo daemon: listening on http:\/\/127\.0\.0\.1:\d+ /;
const CODE = /code=[A-Za-z0-9_-]{20,}/;

t.test('stderr redirected to a file: no login code in it, and how to get one', async (t) => {
  const home = tempHome(t);
  const log = path.join(tempHome(t), 'daemon.log');
  const fd = openSync(log, 'a', 0o600);
  const child = spawn(NODE, [BIN, 'daemon'], {
    env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: newTag(), ALBEDO_NO_PANE_LINK: '' },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<number | string>((r) => child.once('exit', (code, sig) => r(code ?? sig!)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  await until(() => LISTENING.test(readFileSync(log, 'utf8')), 60_000, 'the daemon to listen');
  await until(() => /web pane:/.test(readFileSync(log, 'utf8')), 30_000, 'the web pane line');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'the daemon stopped cleanly');
  const text = readFileSync(log, 'utf8');
  t.notMatch(text, CODE, 'no login code in the log');
  t.notMatch(text, /\/ui\/login/, 'no login link at all');
  t.match(text, /albedo open/, 'it says how to get a link');
});

/** Runs `albedo daemon` on a pseudo-terminal until its web pane line (stopped at teardown): what it printed, and its origin. */
async function onTerminal(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
): Promise<{ screen: string; origin: string }> {
  const home = tempHome(t);
  const p = pty.spawn(NODE, [BIN, 'daemon'], {
    cols: 300,
    rows: 40,
    cwd: ROOT,
    env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: newTag(), ...env } as Record<string, string>,
  });
  let screen = '';
  p.onData((d) => {
    screen += d.replace(/\r\n/g, '\n');
  });
  const exited = new Promise<number>((r) => p.onExit(({ exitCode }) => r(exitCode)));
  t.teardown(async () => {
    p.kill('SIGTERM');
    await exited;
  });
  await until(() => /web pane:.*\n/.test(screen), 60_000, 'the web pane line');
  return { screen, origin: /listening on (http:\/\/127\.0\.0\.1:\d+) /.exec(screen)?.[1] ?? '' };
}

t.test('stderr a terminal: the link is printed, and it logs a browser in', async (t) => {
  const { screen, origin } = await onTerminal(t, { ALBEDO_NO_PANE_LINK: '' });
  const url = /albedo: web pane: (http:\/\/127\.0\.0\.1:\d+\/ui\/login\?code=[A-Za-z0-9_-]{43,})/.exec(screen)?.[1];
  t.ok(url, 'the link is on the terminal');
  t.equal(new URL(url!).origin, origin, "on the daemon's port");
  const r = await request(url!);
  await r.body.dump();
  t.equal(r.statusCode, 303, 'it logs in');
});

t.test('ALBEDO_NO_PANE_LINK: no link even on a terminal', async (t) => {
  const { screen } = await onTerminal(t, { ALBEDO_NO_PANE_LINK: '1' });
  t.notMatch(screen, CODE, 'no login code');
  t.match(screen, /albedo open/, 'how to get one');
});
