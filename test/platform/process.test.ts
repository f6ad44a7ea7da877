// platform/process.ts on real processes: the one liveness check of the daemon's
// lock, the CLI, the settings journal and the composer's pruning.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isAlive, parseProcessRecord, startTimeOf, thisProcess } from '../../platform/process.ts';

const LINUX = existsSync('/proc/self/stat');

/** A process's state letter (field 3 of /proc/<pid>/stat). */
const stateOf = (pid: number): string => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2)[0]!;
};

async function until(pred: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1_000 && !pred(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!pred()) throw new Error(`never saw ${what}`);
}

/** A pid that was a process of ours and is gone (exited and reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

t.test('this process: alive, with its start time on Linux', async (t) => {
  const me = thisProcess();
  t.equal(me.pid, process.pid);
  if (LINUX) t.match(me.start, /^\d+$/, 'a start time in clock ticks');
  t.ok(isAlive(me));
  t.ok(isAlive({ pid: process.pid, start: null }), 'a record without a start time is judged by its pid');
});

t.test('a reused pid is not the process a record names: another start time is another process', { skip: !LINUX }, async (t) => {
  const me = thisProcess();
  t.notOk(isAlive({ pid: me.pid, start: `${Number(me.start) + 1}` }));
});

t.test('a process that exited is dead', async (t) => {
  const pid = await deadPid();
  t.notOk(isAlive({ pid, start: null }));
  if (LINUX) t.equal(startTimeOf(pid), 'dead');
});

t.test('a live child is alive until it is killed; then it is dead even before it is reaped, as a zombie', { skip: !LINUX }, async (t) => {
  // A parent that forks a child which exits at once, and never waits for it: the child stays a zombie.
  const fork = 'import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(600)';
  const parent = spawn('python3', ['-c', fork], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.teardown(() => parent.kill('SIGKILL'));
  const line = await new Promise<string>((r) => createInterface({ input: parent.stdout! }).once('line', r));
  const zombie = Number(line);
  await until(() => stateOf(zombie) === 'Z', 'the zombie');
  t.doesNotThrow(() => process.kill(zombie, 0), 'a signal still reaches its pid');
  t.notOk(isAlive({ pid: zombie, start: null }), 'a zombie is dead');
  t.equal(startTimeOf(zombie), 'dead');

  const rec = { pid: parent.pid!, start: startTimeOf(parent.pid!) as string };
  t.ok(isAlive(rec), 'the live parent is alive');
  parent.kill('SIGKILL');
  await new Promise((r) => parent.once('exit', r));
  t.notOk(isAlive(rec), 'and dead once killed');
});

t.test("another user's process is alive (EPERM is no death)", async (t) => {
  t.ok(isAlive({ pid: 1, start: null }));
});

t.test('pid-file records: only a whole one is one', async (t) => {
  t.same(parseProcessRecord('{"pid":12,"start":"345"}\n'), { pid: 12, start: '345' });
  t.same(parseProcessRecord('{"pid":12,"start":null}'), { pid: 12, start: null });
  for (const bad of [
    '',
    '{',
    'null',
    '[]',
    '{"pid":"12","start":null}',
    '{"pid":1.5,"start":null}',
    '{"pid":12}',
    '{"pid":12,"start":3}',
    // kill(0, 0) and kill(-1, 0) signal a process group and succeed: such a record would count as alive for good.
    '{"pid":0,"start":null}',
    '{"pid":-1,"start":null}',
  ]) {
    t.equal(parseProcessRecord(bad), null, JSON.stringify(bad));
  }
});

t.test('a pid of 0 or below is never alive (kill would address a process group)', async (t) => {
  t.equal(isAlive({ pid: 0, start: null }), false);
  t.equal(isAlive({ pid: -1, start: null }), false);
});
