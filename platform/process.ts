/**
 * Whether a process is still alive, and still the same process: the one copy
 * for the daemon's lock (daemon/lock.ts, and the CLI reading it in
 * bin/client/daemon.ts), the settings write journal's writer
 * (services/settings/journal.ts), and the embedders whose session records the
 * composer prunes (services/composer/service.ts).
 *
 * A pid alone is not a process: once a process is gone its pid may be given
 * to another. So a record names the pid and, on Linux, the process's start
 * time (field 22 of /proc/<pid>/stat, clock ticks since boot); a live pid with
 * another start time is another process. A zombie (killed, not yet reaped by
 * its parent) counts as dead: it will never finish what it was doing.
 *
 * Built-ins only: the CLI loads it on every command (test/architecture/cli-imports).
 */
import { readFileSync } from 'node:fs';

/** A process as a record names it. */
export interface ProcessRecord {
  pid: number;
  /** Its start time (/proc/<pid>/stat field 22); null where /proc is not available, or not recorded. */
  start: string | null;
}

/** The start time of `pid` (Linux), null when unknown, or 'dead' when /proc says it is gone or a zombie. */
export function startTimeOf(pid: number): string | null | 'dead' {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // No /proc at all (not Linux): unknown. /proc without this pid (or one that exits while read): gone.
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

/** This process as a record names it. */
export function thisProcess(): ProcessRecord {
  const start = startTimeOf(process.pid);
  return { pid: process.pid, start: start === 'dead' ? null : start };
}

/**
 * Whether the process `rec` names is alive (EPERM: it is, under another
 * user), not a zombie, and, where both start times are known, the same
 * process. A record without a start time is judged by its pid alone.
 */
export function isAlive(rec: ProcessRecord): boolean {
  if (!Number.isInteger(rec.pid) || rec.pid <= 0) return false;
  try {
    process.kill(rec.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = startTimeOf(rec.pid);
  if (start === 'dead') return false;
  return rec.start === null || start === null || start === rec.start;
}

/** A pid file's record read back from its JSON text: null when it is not one (`start` must be there, a string or null). */
export function parseProcessRecord(text: string): ProcessRecord | null {
  try {
    const v = JSON.parse(text) as Partial<ProcessRecord>;
    if (!Number.isInteger(v.pid) || v.pid! <= 0 || (v.start !== null && typeof v.start !== 'string')) return null;
    return { pid: v.pid!, start: v.start ?? null };
  } catch {
    return null;
  }
}
