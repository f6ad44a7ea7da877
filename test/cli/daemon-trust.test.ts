// The CLI believes daemon.json only when daemon.lock names the same live
// process and what answers on its port proves it holds the token (an HMAC
// of a fresh nonce, GET /v1/health?nonce=N, asked without the token); a
// stranger on that port gets nothing but that question, and `daemon stop`
// signals nobody it cannot prove is the daemon. Ten commands at once with
// no daemon start one daemon (issue 11, hardening: the CLI's findings).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { daemonInfo, errorCode, piped, stopDaemonAtTeardown } from './cli-harness.ts';

t.setTimeout(300_000);

type Tap = Parameters<typeof tempHome>[0];
const STRANGER = path.join(import.meta.dirname, 'fixtures', 'stranger.ts');

interface Received {
  method: string;
  url: string;
  authorization: string | null;
  body: string;
}
interface Stranger {
  child: ChildProcess;
  port: number;
  received: Received[];
}

/** Starts the stranger (killed at teardown); resolves once it listens. */
async function stranger(t: Tap, proof: 'none' | 'wrong'): Promise<Stranger> {
  const child = spawn(NODE, [STRANGER, '--proof', proof], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  const received: Received[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the stranger exited (${code})`)));
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const v = JSON.parse(l);
      if (typeof v.port === 'number') resolve(v.port);
      else received.push(v);
    });
  });
  return { child, port, received };
}

/** /proc/<pid>/stat's start time, as daemon.lock records it. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** daemon.json naming the stranger's port and pid (and a token it was never given); daemon.lock naming `lockPid`, if any. */
function plant(home: string, s: Stranger, lockPid: number | null): string {
  const token = 'stale-token-never-to-be-sent-0123456789abc';
  writeFileSync(path.join(home, 'daemon.json'), JSON.stringify({ port: s.port, token, pid: s.child.pid, version: '0.1.0' }), {
    mode: 0o600,
  });
  if (lockPid !== null) writeFileSync(path.join(home, 'daemon.lock'), JSON.stringify({ pid: lockPid, start: startTime(lockPid) }) + '\n');
  return token;
}

for (const proof of ['none', 'wrong'] as const) {
  t.test(`a stranger on daemon.json's port (its health answer: proof ${proof}) is asked for the proof and sent nothing else`, async (t) => {
    const e = { home: tempHome(t), tag: newTag() };
    const s = await stranger(t, proof);
    const token = plant(e.home, s, s.child.pid!);

    const add = await piped(e, ['mcp', 'add', 'x', '--env', 'API_KEY=topsecret-value', '--', '/bin/true']);
    t.equal(add.code, 3, add.stderr);
    t.equal(errorCode(add.stderr), 'ALBEDO_DAEMON_UNREACHABLE');
    t.equal(add.stderr.trim().split('\n').length, 1, 'one line on stderr');
    t.equal(add.stdout, '');
    const list = await piped(e, ['mcp', 'list', '--json']);
    t.equal(list.code, 3);
    t.equal(errorCode(list.stderr), 'ALBEDO_DAEMON_UNREACHABLE');
    const status = await piped(e, ['daemon', 'status', '--json']);
    t.equal(status.code, 3, 'daemon status: not running');
    t.same(JSON.parse(status.stdout), { running: false, home: e.home });
    const stop = await piped(e, ['daemon', 'stop', '--json']);
    t.equal(stop.code, 3, 'daemon stop refuses to signal');
    t.equal(errorCode(stop.stderr), 'ALBEDO_DAEMON_UNREACHABLE');
    t.equal(stop.stderr.trim().split('\n').length, 1, 'one line on stderr');
    t.ok(alive(s.child.pid!), 'the stranger was not signalled');

    t.equal(s.received.length, 4, 'one request per command');
    for (const r of s.received) {
      t.equal(r.method, 'GET');
      t.match(r.url, /^\/v1\/health\?nonce=[0-9a-f]{32}$/, 'the health question with a nonce');
      t.equal(r.authorization, null, 'without the token');
      t.equal(r.body, '');
    }
    t.equal(new Set(s.received.map((r) => r.url)).size, 4, 'a fresh nonce each time');
    const all = JSON.stringify(s.received);
    t.notOk(all.includes('topsecret-value') || all.includes(token), 'neither the typed secret nor the token reached it');
    t.notOk(existsSync(path.join(e.home, 'daemon.log')), 'and no daemon was started');
  });
}

t.test('daemon stop with a live unrelated pid in daemon.json that daemon.lock does not name: nothing is signalled or asked', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const s = await stranger(t, 'none');
  // No lock at all, then a lock naming another live process (this test): neither makes the stranger's pid the daemon.
  for (const lockPid of [null, process.pid]) {
    plant(e.home, s, lockPid);
    const stop = await piped(e, ['daemon', 'stop', '--json']);
    t.equal(stop.code, 0, stop.stderr);
    t.same(JSON.parse(stop.stdout), { stopped: false, home: e.home }, 'no daemon runs');
    t.ok(alive(s.child.pid!), 'the unrelated process lives');
    const status = await piped(e, ['daemon', 'status', '--json']);
    t.equal(status.code, 3);
  }
  t.same(s.received, [], 'it was not even asked');
});

t.test('the real daemon proves itself: status, a command and stop work through the proof', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const status = await piped(e, ['daemon', 'status', '--json']);
  t.equal(status.code, 0, status.stderr);
  t.match(JSON.parse(status.stdout), { running: true, pid: d.info.pid, port: d.info.port });
  const list = await piped(e, ['mcp', 'list', '--json']);
  t.equal(list.code, 0, list.stderr);
  t.same(JSON.parse(list.stdout), []);
  const stop = await piped(e, ['daemon', 'stop', '--json']);
  t.equal(stop.code, 0, stop.stderr);
  t.same(JSON.parse(stop.stdout), { stopped: true, home: e.home, pid: d.info.pid });
  t.equal(await d.exited, 0, 'it stopped cleanly');
});

t.test('ten commands at once with no daemon: all answer, from one daemon, and at most a few were ever spawned', async (t) => {
  const e = { home: tempHome(t), tag: newTag() };
  stopDaemonAtTeardown(t, e);
  const runs = await Promise.all(Array.from({ length: 10 }, () => piped(e, ['mcp', 'list', '--json'])));
  const info = daemonInfo(e.home);
  t.ok(info, 'a daemon runs');
  for (const r of runs) {
    t.equal(r.code, 0, r.stderr);
    t.same(JSON.parse(r.stdout), []);
    t.match(r.stderr, new RegExp(`\\(pid ${info!.pid},`), 'its news names the daemon that answered');
  }
  t.equal(runs.filter((r) => /started one/.test(r.stderr)).length, 1, 'one command says it started it');
  // Every spawned daemon says one of these in daemon.log: it listens, or it found the home taken.
  const log = readFileSync(path.join(e.home, 'daemon.log'), 'utf8');
  const listening = log.match(/listening on/g)?.length ?? 0;
  const taken = log.match(/already runs/g)?.length ?? 0;
  t.equal(listening, 1, 'one daemon listened');
  t.ok(listening + taken <= 3, `${listening + taken} daemon(s) spawned in all`);
});
