// Signals meant for the daemon's process group must not kill the launcher
// before it has cleaned up. The real CLI runs in a process group of its own,
// mid-call, with a server that ignores SIGTERM and stdin EOF and a grandchild
// that ignores SIGTERM and left the server's session; then the probe's group
// gets SIGHUP or SIGKILL, or the probe alone gets SIGKILL. Each case, under
// both launchers, must leave nothing of the test running: no server, no
// grandchild, no launcher. A stop signal sent to the launcher itself starts
// its orderly shutdown instead of killing it.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, NODE, fixture, newTag, taggedPids, until } from '../helpers.ts';

const BIN = path.join(ROOT, 'bin', 'albedo.ts');
const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-signals-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Live processes whose command line names `tag` (the launcher's does: it carries the server's argv). */
function byCmdline(tag: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (!readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(tag)) continue;
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
const leftovers = (tag: string): number[] => [...new Set([...taggedPids(tag), ...byCmdline(tag)])].filter((p) => p !== process.pid);

async function waitNone(tag: string, withinMs: number): Promise<number[]> {
  const end = Date.now() + withinMs;
  let left = leftovers(tag);
  while (left.length && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    left = leftovers(tag);
  }
  return left;
}

type How =
  | 'SIGHUP to the group'
  | 'SIGKILL to the group'
  | 'SIGKILL to the probe'
  | `${'SIGHUP' | 'SIGQUIT' | 'SIGINT' | 'SIGTERM'} to the launcher`;

/** The launcher serving `tag`'s probe (its argv carries the server's, which names the tag). */
function launcherOf(tag: string): number {
  const pid = byCmdline(tag).find((p) => {
    const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
    return argv[0]!.endsWith('albedo-launcher') || argv[1]?.endsWith('launcher.py');
  });
  if (pid === undefined) throw new Error('no launcher found');
  return pid;
}

/** Starts the probe in a group of its own, mid-call; returns it once the server has the call. */
async function probeMidCall(tag: string, launcher: 'c' | 'python'): Promise<ChildProcess> {
  const mark = path.join(dir, `${tag}.log`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (launcher === 'python') env.ALBEDO_LAUNCHER = 'python';
  else delete env.ALBEDO_LAUNCHER;
  const args = [
    BIN,
    'probe',
    '--env',
    `ALBEDO_TEST_TAG=${tag}`,
    '--call',
    'sleep',
    '--args',
    '{"ms":120000}',
    '--',
    NODE,
    fixture('stdio-group-server.ts'),
    mark,
  ];
  const probe = spawn(NODE, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'], env });
  let stderr = '';
  probe.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const marked = (): string => (existsSync(mark) ? readFileSync(mark, 'utf8') : '');
  await until(() => /^call$/m.test(marked()) || probe.exitCode !== null, 60_000, 'the server to receive the call');
  if (probe.exitCode !== null) throw new Error(`the probe exited early (${probe.exitCode}): ${stderr}`);
  const grandchild = Number(/^grandchild (\d+)$/m.exec(marked())![1]);
  await until(() => taggedPids(tag).includes(grandchild), 10_000, 'the grandchild to run');
  return probe;
}

async function scenario(t: Tap, launcher: 'c' | 'python', how: How): Promise<void> {
  const tag = newTag();
  let probe: ChildProcess | undefined;
  t.teardown(() => {
    // Whatever a failed case left behind goes now, not with the next test.
    for (const pid of [...(probe?.exitCode === null ? [probe.pid!] : []), ...leftovers(tag)])
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
  });
  probe = await probeMidCall(tag, launcher);
  const before = leftovers(tag).length;
  // Bounded: a launcher that ignored the signal would leave the probe waiting for its call.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    const timer = setTimeout(() => resolve({ code: null, signal: null }), 30_000);
    probe.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
  if (how === 'SIGHUP to the group') process.kill(-probe.pid!, 'SIGHUP');
  else if (how === 'SIGKILL to the group') process.kill(-probe.pid!, 'SIGKILL');
  else if (how === 'SIGKILL to the probe') process.kill(probe.pid!, 'SIGKILL');
  else process.kill(launcherOf(tag), how.split(' ')[0] as NodeJS.Signals);
  const end = await exited;
  if (how.endsWith('to the launcher')) t.ok(end.code === 1, `${how}: the probe's call failed (the server was shut down)`);
  else t.ok(end.signal !== null, `${how}: the probe died of it`);
  t.same(await waitNone(tag, 15_000), [], `${launcher} launcher, ${how}: no process left (${before} ran before)`);
}

type Tap = { ok(v: unknown, m: string): void; same(a: unknown, b: unknown, m: string): void; teardown(fn: () => unknown): void };

t.test('the C launcher was built (npm run prepare)', async (t) => {
  t.ok(existsSync(path.join(ROOT, 'build', 'albedo-launcher')));
});

for (const launcher of ['c', 'python'] as const) {
  t.test(`${launcher} launcher: group signals do not stop it before it has cleaned up`, async (t) => {
    // The three cases are independent (each has its own tag and process group), so they run at once.
    await Promise.all(
      (['SIGHUP to the group', 'SIGKILL to the group', 'SIGKILL to the probe'] as const).map((how) => scenario(t, launcher, how)),
    );
  });
  t.test(`${launcher} launcher: a stop signal sent to it runs its shutdown`, async (t) => {
    await Promise.all((['SIGHUP', 'SIGQUIT', 'SIGINT', 'SIGTERM'] as const).map((sig) => scenario(t, launcher, `${sig} to the launcher`)));
  });
}
