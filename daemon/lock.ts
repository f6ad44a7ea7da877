/**
 * One daemon per $ALBEDO_HOME: `daemon.lock`, a pid file naming the daemon
 * that holds the home (its pid and, on Linux, its start time).
 *
 * Why a pid file and not a lock directory kept fresh by its holder (what
 * creds.json's locks are): a daemon that was SIGKILLed must be replaceable
 * at once, and "is that process alive?" answers that at once, where an
 * mtime only goes stale after its timeout. The start time guards against a
 * reused pid; a zombie counts as dead. The file, its mutex and the liveness
 * check are platform/lock.ts's and platform/process.ts's.
 */
import path from 'node:path';
import { acquirePidFile, readPidFile, type PidLock } from '../platform/lock.ts';
import type { ProcessRecord } from '../platform/process.ts';

export const LOCK_FILE = 'daemon.lock';

/** What `daemon.lock` holds. */
export type LockRecord = ProcessRecord;

export type Acquired = PidLock;

/** The record in `home`'s lock file; null when there is none or it is not one (a torn write cannot happen: it is renamed into place). */
export function readLock(home: string): LockRecord | null {
  return readPidFile(path.join(home, LOCK_FILE));
}

/**
 * Takes `home` for this process, unless a live daemon holds it (then
 * `holder` names it). A lock left by a dead daemon is replaced.
 */
export function acquireHomeLock(home: string): Promise<Acquired> {
  return acquirePidFile(path.join(home, LOCK_FILE));
}
