/**
 * One daemon per $ALBEDO_HOME: `daemon.lock`, a pid file naming the daemon
 * that holds the home (its pid and, on Linux, its start time).
 *
 * Why a pid file and not a lock directory kept fresh by its holder (what
 * proper-lockfile does for creds.json): a daemon that was SIGKILLed must be
 * replaceable at once, and "is that process alive?" answers that at once,
 * where an mtime only goes stale after its timeout. The start time guards
 * against a reused pid (a new process with the dead daemon's pid is not the
 * daemon); a zombie counts as dead.
 *
 * Checking and replacing a stale file must not race with another daemon
 * starting: two starters could both judge the file stale, and the second
 * would delete the first one's fresh lock. So the check-and-write runs under
 * a short mutex (proper-lockfile's atomic mkdir, held for milliseconds, so
 * its staleness timeout only matters if a starter dies inside it).
 */
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

export const LOCK_FILE = 'daemon.lock';

/** What `daemon.lock` holds. */
export interface LockRecord {
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22); null where /proc is not available. */
  start: string | null;
}

export type Acquired = { held: true; release(): Promise<void> } | { held: false; holder: LockRecord };

/** The start time of `pid` (Linux), null when unknown, or 'dead' when /proc says it is gone or a zombie. */
function startOf(pid: number): string | null | 'dead' {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // No /proc at all (not Linux): unknown. /proc without this pid: gone.
    try {
      readFileSync('/proc/self/stat');
    } catch {
      return null;
    }
    return code === 'ENOENT' || code === 'ESRCH' ? 'dead' : null;
  }
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3, starttime field 22.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return 'dead';
  return fields[19] ?? null;
}

/** Whether the process a lock record names is still that process. */
export function isAlive(rec: LockRecord): boolean {
  try {
    process.kill(rec.pid, 0);
  } catch (err) {
    // EPERM: it exists, it is someone else's.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = startOf(rec.pid);
  if (start === 'dead') return false;
  return rec.start === null || start === null || start === rec.start;
}

/** The record in `home`'s lock file; null when there is none or it is not one (a torn write cannot happen: it is renamed into place). */
export function readLock(home: string): LockRecord | null {
  try {
    const v = JSON.parse(readFileSync(path.join(home, LOCK_FILE), 'utf8')) as Partial<LockRecord>;
    if (!Number.isInteger(v.pid) || (v.start !== null && typeof v.start !== 'string')) return null;
    return { pid: v.pid!, start: v.start ?? null };
  } catch {
    return null;
  }
}

/** Writes `file` by a temporary file created exclusively (never opened through a file or link already there), then renamed. */
function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  // A leftover (or planted) temporary file goes first: removing a link removes the link, not what it points to.
  rmSync(tmp, { force: true });
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

/** Runs `fn` holding the short start mutex of `home`. */
async function underMutex<T>(home: string, fn: () => T): Promise<T> {
  const release = await lockfile.lock(home, {
    lockfilePath: path.join(home, `${LOCK_FILE}.mutex`),
    realpath: false,
    stale: 5_000,
    // Long enough to outwait a mutex left by a starter that died inside it (stale after 5 s).
    retries: { retries: 60, factor: 1, minTimeout: 50, maxTimeout: 200 },
    onCompromised: () => {},
  });
  try {
    return fn();
  } finally {
    await release().catch(() => {});
  }
}

/**
 * Takes `home` for this process, unless a live daemon holds it (then
 * `holder` names it). A lock left by a dead daemon is replaced.
 */
export async function acquireHomeLock(home: string): Promise<Acquired> {
  const file = path.join(home, LOCK_FILE);
  const start = startOf(process.pid);
  const mine: LockRecord = { pid: process.pid, start: start === 'dead' ? null : start };
  return underMutex(home, (): Acquired => {
    const cur = readLock(home);
    if (cur && cur.pid !== process.pid && isAlive(cur)) return { held: false, holder: cur };
    writeAtomic(file, JSON.stringify(mine) + '\n');
    return {
      held: true,
      release: () =>
        underMutex(home, () => {
          if (readLock(home)?.pid === process.pid) rmSync(file, { force: true });
        }),
    };
  });
}
