/**
 * A process and everything it started, read from /proc (Linux): for the
 * sharing and soak rows (bench/sharing.ts, bench/soak.ts), which count
 * server processes and sum their memory and descriptors. Albedo's stdio
 * launchers (build/albedo-launcher, a process beside each server) are
 * counted apart from the servers, and their memory is in the sums.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Every live (non-zombie) descendant of `root`, found by parent pid. */
export function descendants(root: number = process.pid): number[] {
  const children = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue;
      const ppid = Number(rest[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(d));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const todo = [...(children.get(root) ?? [])];
  while (todo.length) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

/** VmRSS of `pid` in kB (0 when it is gone). */
export function rssKb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Open file descriptors of `pid` (0 when it is gone). */
export function fdCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** Whether `pid` is one of Albedo's stdio launchers (its executable is build/albedo-launcher). */
export function isLauncher(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/exe`).endsWith('albedo-launcher');
  } catch {
    return false;
  }
}

export interface TreeSample {
  /** Server processes (descendants that are not launchers). */
  servers: number;
  /** Every descendant, launchers included. */
  processes: number;
  /** VmRSS of `root` and every descendant, MB. */
  rssMb: number;
  /** VmRSS of `root` alone, MB. */
  selfRssMb: number;
  /** Open descriptors of `root` and every descendant. */
  fds: number;
}

/** `root` and its descendants, counted and summed. */
export function sampleTree(root: number = process.pid): TreeSample {
  const ds = descendants(root);
  const self = rssKb(root);
  let rss = self;
  let fds = fdCount(root);
  let servers = 0;
  for (const p of ds) {
    rss += rssKb(p);
    fds += fdCount(p);
    if (!isLauncher(p)) servers++;
  }
  return { servers, processes: ds.length, rssMb: rss / 1024, selfRssMb: self / 1024, fds };
}

/** The server processes among `root`'s descendants (launchers left out). */
export function serverPids(root: number = process.pid): number[] {
  return descendants(root).filter((p) => !isLauncher(p));
}
