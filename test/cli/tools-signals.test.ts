// A session `albedo call` opens for itself never outlives the command, even
// when the command is interrupted while the session is still being opened
// (a slow-to-start server keeps the open in flight): Ctrl-C in a real
// terminal, SIGTERM and SIGHUP close it once the open answers, and the
// command exits 130, 143 or 129 without making the call. `call SERVER/TOOL`
// opens its session over that server only (issue 11, hardening).
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pty from 'node-pty';
import { NODE, ROOT, fixture, newTag, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { BIN, entry, sdkServer, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(400_000);

/** Seconds the slow servers take to answer anything: far longer than a signal takes to arrive once they have started. */
const SLOW_S = 20;
const CASES = ['ctrl-c', 'sigterm', 'sighup'] as const;

/** The events the slow server logged so far: whole lines only (a line it is writing now is read next time). */
const events = (file: string): string[] => {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).event as string);
};

t.test('a signal while the session is being opened: the session is closed once the open answers, and nothing is called', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const log = (c: string): string => path.join(home, `${c}.log`);
  const servers: Record<string, unknown> = { sdk: sdkServer() };
  for (const c of CASES)
    servers[c] = entry(NODE, [fixture('composer-slow-server.ts'), String(SLOW_S), log(c)], { startupTimeoutMs: 300_000 });
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers } }));
  const d: Daemon = await startDaemon(t, home, { tag });
  const env = { ...process.env, ALBEDO_HOME: home } as Record<string, string>;
  const args = (c: string): string[] => [BIN, 'call', `${c}/echo`, '--args', '{"text":"must not be called"}'];

  const check = async (c: string, code: number, exited: Promise<number>, signal: () => void): Promise<void> => {
    await until(() => events(log(c)).includes('start'), 120_000, `${c}: its server to start for the session being opened`);
    t.notOk(events(log(c)).includes('answering'), `${c}: the open is still in flight when the signal comes`);
    signal();
    t.equal(await exited, code, `${c}: exit ${code}`);
    t.ok(events(log(c)).includes('answering'), `${c}: the command waited for the open to answer`);
    // (A command that did not wait left the open to finish without it: the session it then got would stay, and its server.)
    await until(() => events(log(c)).includes('answering'), 120_000, `${c}: the open to be answered`);
    t.same(await waitNoLeftovers(tag, 30_000), [], `${c}: no server process left`);
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], `${c}: no session left open`);
    t.notOk(events(log(c)).includes('call'), `${c}: the tool was not called`);
  };

  const term = pty.spawn(NODE, args('ctrl-c'), { cols: 200, rows: 30, cwd: ROOT, env });
  const termExit = new Promise<number>((r) => term.onExit(({ exitCode }) => r(exitCode)));
  await check('ctrl-c', 130, termExit, () => term.write('\x03'));
  t.same([events(log('sigterm')), events(log('sighup'))], [[], []], 'call SERVER/TOOL opened its session over that server only');

  for (const [c, sig, code] of [
    ['sigterm', 'SIGTERM', 143],
    ['sighup', 'SIGHUP', 129],
  ] as const) {
    const child = spawn(NODE, args(c), { cwd: ROOT, env, stdio: 'ignore' });
    const exited = new Promise<number>((r) => child.once('exit', (n, s) => r(n ?? (s === sig ? -1 : -2))));
    await check(c, code, exited, () => child.kill(sig));
  }
});

t.test('SIGTERM and SIGHUP during a call: the session is closed before the command exits (143, 129)', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } } }));
  const d = await startDaemon(t, home, { tag });
  for (const [sig, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    const child = spawn(NODE, [BIN, 'call', 'sdk/sleep', '--args', '{"ms":120000}'], {
      cwd: ROOT,
      env: { ...process.env, ALBEDO_HOME: home },
      stdio: 'ignore',
    });
    const exited = new Promise<number>((r) => child.once('exit', (n) => r(n ?? -1)));
    // The session is open and the call sent (or about to be): the close cancels it either way.
    await until(async () => (await d.call('GET', '/v1/sessions')).body.sessions.length === 1, 60_000, "the call's session to open");
    child.kill(sig);
    t.equal(await exited, code, `${sig}: exit ${code}`);
    t.same((await d.call('GET', '/v1/sessions')).body.sessions, [], `${sig}: no session left open`);
  }
});
