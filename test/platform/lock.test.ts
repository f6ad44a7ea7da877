// platform/lock.ts on real files and real processes: the pid file (daemon.lock)
// and the lock directories (creds.json's locks, the CLI's spawn mutex).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { acquirePidFile, lockDir, readPidFile, tryLockDir } from '../../platform/lock.ts';
import { startTimeOf, thisProcess } from '../../platform/process.ts';

const LOCK = pathToFileURL(path.join(import.meta.dirname, '..', '..', 'platform', 'lock.ts')).href;

function dir(t: { teardown(fn: () => unknown): void }): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'albedo-lock-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** Another process that tries to take pid file `file`: says `held` or `refused <pid>`, holds until its stdin ends. */
function taker(t: { teardown(fn: () => unknown): void }, file: string): { child: ChildProcess; said: Promise<string> } {
  const script = `
    const { acquirePidFile } = await import(${JSON.stringify(LOCK)});
    const r = await acquirePidFile(${JSON.stringify(file)});
    console.log(r.held ? 'held' : 'refused ' + r.holder.pid);
    process.stdin.resume();
    process.stdin.on('end', async () => { if (r.held) await r.release(); process.exit(0); });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  const said = new Promise<string>((r) => createInterface({ input: child.stdout! }).once('line', r));
  return { child, said };
}

const ended = (c: ChildProcess): Promise<unknown> => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)));

t.test('a pid file is taken by this process (pid and start time, 0600) and removed on release', async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  const lock = await acquirePidFile(file);
  t.ok(lock.held);
  t.same(readPidFile(file), thisProcess());
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.notOk(existsSync(`${file}.mutex`), 'the mutex is held only while the file is checked and written');
  if (lock.held) await lock.release();
  t.notOk(existsSync(file));
});

t.test("a live process's pid file is not taken; it names the holder", async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  const other = taker(t, file);
  t.equal(await other.said, 'held');
  const lock = await acquirePidFile(file);
  t.same(lock, { held: false, holder: { pid: other.child.pid, start: startTimeOf(other.child.pid!) } });
  other.child.stdin!.end();
  await ended(other.child);
  t.notOk(existsSync(file), 'its holder removed it on release');
});

t.test("a dead holder's, a reused pid's and a torn pid file are taken over", async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  const other = taker(t, file);
  t.equal(await other.said, 'held');
  other.child.kill('SIGKILL');
  await ended(other.child);
  t.equal(readPidFile(file)?.pid, other.child.pid, 'a killed holder leaves its file');
  const cases: Array<[string, string]> = [
    ['dead holder', readFileSync(file, 'utf8')],
    ['reused pid', JSON.stringify({ pid: process.ppid, start: '1' })],
    ['torn', '{"pid":'],
  ];
  if (!existsSync('/proc/self/stat')) cases.splice(1, 1); // no start times to compare
  for (const [what, text] of cases) {
    writeFileSync(file, text);
    const lock = await acquirePidFile(file);
    t.ok(lock.held, what);
    t.equal(readPidFile(file)?.pid, process.pid, `${what}: the file names this process`);
    if (lock.held) await lock.release();
  }
});

t.test('release leaves a pid file that names another process', async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  const lock = await acquirePidFile(file);
  const theirs = JSON.stringify({ pid: process.ppid, start: null });
  writeFileSync(file, theirs);
  if (lock.held) await lock.release();
  t.equal(readFileSync(file, 'utf8'), theirs);
});

t.test("a taker judges the pid file only under its mutex: as the mutex's holder left it", async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  writeFileSync(file, '{"pid":'); // stale: a torn file
  // Another taker holds the mutex: it has judged the file stale and is about to write its own record.
  const mutex = await lockDir(file, `${file}.mutex`, { stale: 10_000 });
  const taking = acquirePidFile(file);
  const other = { pid: process.ppid, start: startTimeOf(process.ppid) as string | null };
  writeFileSync(file, `${JSON.stringify(other)}\n`);
  await mutex();
  t.same(await taking, { held: false, holder: other }, 'it finds the live holder, not the stale file it would have replaced');
});

t.test('of processes taking one pid file at once, exactly one holds it', async (t) => {
  const file = path.join(dir(t), 'daemon.lock');
  const takers = Array.from({ length: 4 }, () => taker(t, file));
  const said = await Promise.all(takers.map((x) => x.said));
  const holders = takers.filter((_, i) => said[i] === 'held');
  t.equal(holders.length, 1, said.join(', '));
  const holder = holders[0]!.child.pid;
  t.same(
    said.filter((s) => s !== 'held'),
    ['refused', 'refused', 'refused'].map((r) => `${r} ${holder}`),
    'the others name it',
  );
  t.equal(readPidFile(file)?.pid, holder);
  for (const x of takers) x.child.stdin!.end();
  await Promise.all(takers.map((x) => ended(x.child)));
});

t.test('a lock directory: held, refused to another, free again once released', async (t) => {
  const d = dir(t);
  const lockPath = path.join(d, 'x.lock');
  const release = await lockDir(path.join(d, 'x'), lockPath, { stale: 10_000 });
  t.ok(statSync(lockPath).isDirectory());
  t.equal(await tryLockDir(path.join(d, 'y'), lockPath, { stale: 10_000 }), null, 'tryLockDir: null while held');
  await t.rejects(lockDir(path.join(d, 'z'), lockPath, { stale: 10_000, retries: 0 }), { code: 'ELOCKED' });
  await release();
  t.notOk(existsSync(lockPath));
  await t.resolves(release(), 'a second release is no error');
  const again = await tryLockDir(path.join(d, 'y'), lockPath, { stale: 10_000 });
  t.type(again, 'function', 'free again');
  await again!();
});

t.test('a stale lock directory (its holder stopped refreshing it) is taken over', async (t) => {
  const d = dir(t);
  const lockPath = path.join(d, 'x.lock');
  mkdirSync(lockPath);
  const old = new Date(Date.now() - 60_000);
  utimesSync(lockPath, old, old);
  const release = await tryLockDir(path.join(d, 'x'), lockPath, { stale: 10_000 });
  t.type(release, 'function');
  await release!();
});

t.test('a holder whose lock directory was taken from it is told (onCompromised)', async (t) => {
  const d = dir(t);
  const lockPath = path.join(d, 'x.lock');
  let lost: Error | undefined;
  const release = await lockDir(path.join(d, 'x'), lockPath, { stale: 2_000, update: 1_000, onCompromised: (e) => (lost = e) });
  rmSync(lockPath, { recursive: true });
  for (let i = 0; i < 1_500 && !lost; i++) await new Promise((r) => setTimeout(r, 20));
  t.ok(lost, 'told at its next refresh');
  await release();
});
