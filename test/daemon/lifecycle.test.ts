// `albedo daemon` as a process (issue 11 item 1): daemon.json (0600: port,
// token, pid, version), one daemon per $ALBEDO_HOME, SIGTERM/SIGINT stop it
// cleanly (servers reaped before it exits, daemon.json and the lock gone),
// and a daemon started after one that was SIGKILLed takes over with no
// orphan of it left.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { NODE, ROOT, newTag, taggedPids, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { call, entry, sdkServer, spawnDaemon, srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const version = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** A server that never answers: its strict save waits (startupTimeoutMs), so it is alive while the daemon is stopped. */
const hanging = (): Record<string, unknown> => entry(NODE, ['-e', 'setInterval(() => {}, 1000)'], { startupTimeoutMs: 120_000 });

t.test('daemon.json is 0600 with port, token, pid and version; a second daemon is refused and says where the first is', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const file = path.join(home, 'daemon.json');
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600');
  t.same(Object.keys(d.info).sort(), ['pid', 'port', 'token', 'version']);
  t.equal(d.info.pid, d.child.pid, 'its own pid');
  t.match(d.info.token, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
  t.equal(d.info.version, version);

  const second = spawnDaemon(home, { tag });
  t.equal(await second.exited, 3, 'exit 3: a daemon already runs');
  const said = second.lines.join('\n');
  t.ok(said.includes(`pid ${d.info.pid}`) && said.includes(`127.0.0.1:${d.info.port}`), `names the first one's pid and port: ${said}`);
  t.same(JSON.parse(readFileSync(file, 'utf8')), d.info, "daemon.json is still the first one's");
  t.equal((await d.call('GET', '/v1/mcp/servers')).status, 200, 'the first one still serves');
});

for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${sig} during a save: exit 0, the server reaped before the exit, daemon.json and the lock removed, nothing saved`, async (t) => {
    const tag = newTag();
    const home = tempHome(t);
    const d = await startDaemon(t, home, { tag });
    const put = d.call('PUT', srv('slow'), { body: hanging() }).catch((err: Error) => err);
    await until(() => taggedPids(tag).length > 0, 60_000, 'the server being tried to start');
    t.equal(await d.stop(sig), 0, 'exit 0');
    t.same(taggedPids(tag), [], 'no server process outlives the daemon (reaped before it exited)');
    const r = await put;
    t.ok(r instanceof Error || r.status >= 500, 'the save in flight did not succeed');
    t.notOk(existsSync(path.join(home, 'daemon.json')), 'daemon.json removed');
    t.notOk(existsSync(path.join(home, 'daemon.lock')), 'the lock removed');
    t.notOk(existsSync(path.join(home, 'extensions.json')), 'nothing was saved');
    t.match(d.lines.join('\n'), /stopped/);
  });
}

/** Whether a connection to 127.0.0.1:`port` is refused (nothing listens there). */
function refusedAt(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** Whether daemon.json (`file`) exists and names `pid`. */
function namesPid(file: string, pid: number): boolean {
  try {
    return JSON.parse(readFileSync(file, 'utf8')).pid === pid;
  } catch {
    return false;
  }
}

/** Whether `pid` is a live process (not gone, not a zombie). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

t.test('a stopping daemon removes daemon.json before it stops listening: it never names a port nobody answers on', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  // A server that ignores SIGTERM, being tried: reaping it takes the launcher's grace, so the stop lasts seconds.
  const stubborn = entry(NODE, ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)'], { startupTimeoutMs: 120_000 });
  const put = d.call('PUT', srv('stubborn'), { body: stubborn }).catch((err: Error) => err);
  await until(() => taggedPids(tag).length > 0, 60_000, 'the server being tried to start');
  const file = path.join(home, 'daemon.json');
  const pid = d.info.pid;
  d.child.kill('SIGTERM');
  let window = 0;
  const stale: number[] = [];
  for (let i = 0; alive(pid); i++) {
    // In this order: the port refused, then daemon.json still there, then the process still alive — all three at once.
    const refused = await refusedAt(d.info.port);
    const named = namesPid(file, pid);
    if (!refused || !alive(pid)) continue;
    if (named) stale.push(i);
    else window++;
  }
  t.equal(await d.exited, 0, 'exit 0');
  t.same(stale, [], 'never: the port free while daemon.json still names the live daemon');
  t.ok(window > 0, `the stop was watched while the port was free and the process alive (${window} looks)`);
  await put;
});

t.test('SIGKILL during a save: no orphan; the next daemon takes over the home, with a new token', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const first = await startDaemon(t, home, { tag });
  const saved = await first.call('PUT', srv('sdk'), { body: sdkServer() });
  t.same([saved.status, saved.body.server.tools], [201, 5], 'a server saved, with its catalogue');
  const put = first.call('PUT', srv('slow'), { body: hanging() }).catch((err: Error) => err);
  await until(() => taggedPids(tag).length > 0, 60_000, 'the server being tried to start');
  t.equal(await first.stop('SIGKILL'), 'SIGKILL');
  t.same(await waitNoLeftovers(tag, 15_000), [], 'the launcher reaped the server when the daemon died');
  t.ok((await put) instanceof Error, 'the save in flight was cut off');
  t.equal(JSON.parse(readFileSync(path.join(home, 'daemon.json'), 'utf8')).pid, first.info.pid, 'the dead daemon left its daemon.json');

  const next = await startDaemon(t, home, { tag });
  t.not(next.info.pid, first.info.pid);
  t.not(next.info.token, first.info.token, 'a new token');
  t.equal((await next.call('GET', '/v1/mcp/servers')).status, 200, 'the new daemon serves');
  const old = await call(next.info, 'GET', '/v1/mcp/servers', { token: first.info.token });
  t.equal(old.status, 401, "the dead daemon's token is refused");
  t.equal(old.body.error.code, 'ALBEDO_UNAUTHORIZED');
  const after = await next.call('GET', '/v1/mcp/servers');
  t.same(
    after.body.servers.map((s: { name: string }) => s.name),
    ['sdk'],
    'the cut-off save left nothing; the saved server is there',
  );
  t.equal(after.body.servers[0].tools, 5, 'and its saved catalogue is reused (no dial: the server is not started)');
  t.same(taggedPids(tag), [], 'nothing was started to list it');
  t.equal(await next.stop(), 0);
  t.notOk(existsSync(path.join(home, 'daemon.json')));
});

t.test('--port: the daemon listens there; a port in use fails the start (exit 1) and frees the home', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const first = await startDaemon(t, home, { tag });
  const other = tempHome(t);
  const busy = spawnDaemon(other, { tag, port: first.info.port });
  t.equal(await busy.exited, 1, 'exit 1');
  t.notOk(existsSync(path.join(other, 'daemon.lock')), 'the failed start released its home');
  t.notOk(existsSync(path.join(other, 'daemon.json')));
  await first.stop();
  const again = await startDaemon(t, other, { tag, port: first.info.port });
  t.equal(again.info.port, first.info.port, 'listens on the port asked for');
  const usage = spawnDaemon(tempHome(t), { tag, port: 0 });
  t.equal(await usage.exited, 2, '--port 0 is bad usage');
});
