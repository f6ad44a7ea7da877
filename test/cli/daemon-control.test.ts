// The CLI finds the daemon of $ALBEDO_HOME, starts one when none runs (and
// says so on stderr), and `albedo daemon status|stop` see and stop it
// (issue 11, item 3). Real processes in a real terminal and with pipes.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { daemonInfo, errorCode, gone, piped, screenJson, stopDaemonAtTeardown, term } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('no daemon: status says so (exit 3); a command starts one, says so on stderr, and answers; stop stops it', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);

  const before = await term(e, ['daemon', 'status', '--json']);
  t.equal(before.code, 3, 'exit 3: not running');
  t.same(screenJson(before), { running: false, home: e.home });
  const stopNone = await term(e, ['daemon', 'stop', '--json']);
  t.equal(stopNone.code, 0, 'stopping none is nothing to do');
  t.same(screenJson(stopNone), { stopped: false, home: e.home });

  const list = await piped(e, ['mcp', 'list', '--json']);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout), [], 'stdout is the one JSON value');
  const info = daemonInfo(e.home);
  t.ok(info, 'daemon.json was written by the daemon it started');
  t.match(list.stderr, new RegExp(`started one \\(pid ${info!.pid},`), 'stderr says a daemon was started, and which');
  t.ok(existsSync(path.join(e.home, 'daemon.log')), 'its stderr goes to daemon.log');
  t.match(readFileSync(path.join(e.home, 'daemon.log'), 'utf8'), /listening on/);

  const again = await piped(e, ['mcp', 'list', '--json']);
  t.equal(again.code, 0);
  t.equal(again.stderr, '', 'a running daemon is used as it is: nothing said');
  t.equal(daemonInfo(e.home)!.pid, info!.pid, 'the same daemon');

  const status = await term(e, ['daemon', 'status', '--json']);
  t.equal(status.code, 0);
  t.match(screenJson(status), { running: true, home: e.home, pid: info!.pid, port: info!.port, version: String });

  const stop = await term(e, ['daemon', 'stop', '--json']);
  t.equal(stop.code, 0);
  t.same(screenJson(stop), { stopped: true, home: e.home, pid: info!.pid });
  t.ok(await gone(info!.pid, 1_000), 'the daemon had exited when stop returned');
  t.notOk(existsSync(path.join(e.home, 'daemon.json')), 'daemon.json removed');
  t.equal((await term(e, ['daemon', 'status'])).code, 3, 'not running any more');
});

t.test('daemon start: starts one when none runs, uses the running one after, and two at once start one', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const [a, b] = await Promise.all([piped(e, ['daemon', 'start', '--json']), piped(e, ['daemon', 'start', '--json'])]);
  t.equal(a.code, 0, a.stderr);
  t.equal(b.code, 0, b.stderr);
  const info = daemonInfo(e.home)!;
  for (const r of [a, b]) t.match(JSON.parse(r.stdout), { home: e.home, pid: info.pid, port: info.port, version: String });
  t.equal([a, b].filter((r) => JSON.parse(r.stdout).started === true).length >= 1, true, 'at least one of them started it');
  t.equal(readFileSync(path.join(e.home, 'daemon.log'), 'utf8').match(/listening on/g)?.length, 1, 'one daemon ran');
  const again = await piped(e, ['daemon', 'start', '--json']);
  t.equal(again.code, 0);
  t.same(JSON.parse(again.stdout), { started: false, home: e.home, pid: info.pid, port: info.port, version: info.version });
  t.equal(again.stderr, '', 'nothing said: it was running');
  t.equal((await piped(e, ['daemon', 'start', 'extra'])).code, 2, 'extra words are bad usage');
});

t.test('a daemon.json left by a SIGKILLed daemon: the next command starts a new daemon and answers', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const d = await startDaemon(t, e.home, { tag: e.tag });
  await d.stop('SIGKILL');
  t.ok(existsSync(path.join(e.home, 'daemon.json')), 'the killed daemon left its daemon.json');
  const r = await term(e, ['mcp', 'list']);
  t.equal(r.code, 0, r.screen);
  t.match(r.screen, /started one \(pid \d+/, 'it said it started one');
  const info = daemonInfo(e.home)!;
  t.not(info.pid, d.info.pid, 'a new daemon');
  t.not(info.token, d.info.token, 'with a new token');
  const s = await term(e, ['status', '--json']);
  t.equal(s.code, 0);
  t.match(screenJson(s), { daemon: { pid: info.pid, port: info.port, home: e.home }, servers: [], sessions: 0 });
});

t.test('a command that sends several requests at once starts one daemon, not one per request', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const r = await piped(e, ['status', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr.match(/started one/g)?.length, 1, 'one start said, for the three requests of status');
  t.match(JSON.parse(r.stdout), { daemon: { pid: daemonInfo(e.home)!.pid }, servers: [], sessions: 0 });
  t.equal(readFileSync(path.join(e.home, 'daemon.log'), 'utf8').match(/listening on/g)?.length, 1, 'one daemon ran');
  t.notMatch(readFileSync(path.join(e.home, 'daemon.log'), 'utf8'), /already runs/, 'no second daemon was started to find the home taken');
});

t.test('a daemon that cannot start: exit 3, one line naming why', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  // A broken extensions.json is served (the last valid settings), so break the home itself: a file where store/ must be.
  const { writeFileSync } = await import('node:fs');
  writeFileSync(path.join(e.home, 'store'), 'not a directory');
  const r = await piped(e, ['mcp', 'list', '--json']);
  t.equal(r.code, 3, r.stderr);
  t.equal(r.stdout, '', 'nothing on stdout');
  t.equal(errorCode(r.stderr), 'ALBEDO_DAEMON_UNREACHABLE');
  t.equal(
    r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('albedo: ALBEDO_')).length,
    1,
    'one error line',
  );
});
