/**
 * Locks between processes, in two kinds (the one copy of each):
 *
 * - A lock directory (proper-lockfile: an atomic mkdir whose mtime its
 *   holder refreshes, so only a holder that stopped goes stale): for a lock
 *   held while work is done — creds.json's entry and document locks
 *   (services/oauth/store.ts), the CLI's daemon-spawn mutex
 *   (bin/client/daemon.ts), the short mutex of a pid file below.
 * - A pid file naming its holder (platform/process.ts: pid and start time):
 *   for a lock that must be taken over at once when its holder dies, however
 *   it died (`daemon.lock`: a SIGKILLed daemon is replaced at once, where a
 *   lock directory would only go stale after its timeout). Checking and
 *   replacing a stale file runs under a short lock-directory mutex, so two
 *   takers cannot both judge it stale and the second delete the first's.
 *
 * proper-lockfile loads with this module: the CLI imports it only when it
 * starts a daemon.
 */
import { readFileSync, rmSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import type { LockOptions } from 'proper-lockfile';
import { writeFileAtomic } from './atomic-file.ts';
import { isAlive, parseProcessRecord, thisProcess, type ProcessRecord } from './process.ts';

/** Gives a lock back; never throws (a lock already lost or removed is given back all the same). */
export type Release = () => Promise<void>;

export interface DirLockOptions {
  /** A lock directory whose mtime is older than this is stale, and taken over. */
  stale: number;
  /** How often its holder refreshes the mtime; default half of `stale`. */
  update?: number;
  /** How long to wait for a lock held by someone else (proper-lockfile's retry options); default no wait. */
  retries?: LockOptions['retries'];
  /** Called when the lock was lost while held (someone judged it stale); default: ignored. */
  onCompromised?: (err: Error) => void;
}

/**
 * Takes the lock directory `lockPath`. proper-lockfile keys its own
 * bookkeeping by `target`, so each lock needs a target of its own; the target
 * need not exist. Rejects with code ELOCKED when it stays held by another.
 */
export async function lockDir(target: string, lockPath: string, opts: DirLockOptions): Promise<Release> {
  const release = await lockfile.lock(target, {
    lockfilePath: lockPath,
    realpath: false,
    stale: opts.stale,
    update: opts.update,
    retries: opts.retries ?? 0,
    onCompromised: opts.onCompromised ?? (() => {}),
  });
  return () => release().catch(() => {});
}

/** Takes the lock directory `lockPath` if it is free now; null when another holds it. */
export async function tryLockDir(target: string, lockPath: string, opts: Omit<DirLockOptions, 'retries'>): Promise<Release | null> {
  try {
    return await lockDir(target, lockPath, { ...opts, retries: 0 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOCKED') return null;
    throw err;
  }
}

export type PidLock = { held: true; release(): Promise<void> } | { held: false; holder: ProcessRecord };

/** The record in pid file `file`; null when there is none or it is not one (a torn write cannot happen: it is renamed into place). */
export function readPidFile(file: string): ProcessRecord | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  return parseProcessRecord(text);
}

/** Runs `fn` holding the short mutex of pid file `file` (`<file>.mutex`). */
async function underMutex<T>(file: string, fn: () => T): Promise<T> {
  const release = await lockDir(file, `${file}.mutex`, {
    stale: 5_000,
    // Long enough to outwait a mutex left by a taker that died inside it (stale after 5 s).
    retries: { retries: 60, factor: 1, minTimeout: 50, maxTimeout: 200 },
  });
  try {
    return fn();
  } finally {
    await release();
  }
}

/**
 * Takes pid file `file` for this process (mode 0600, written atomically),
 * unless a live process holds it (then `holder` names it). A file left by a
 * dead process, or by a process whose pid was since reused, is replaced.
 * `release` removes it, if it still names this process.
 */
export async function acquirePidFile(file: string): Promise<PidLock> {
  const mine = thisProcess();
  return underMutex(file, (): PidLock => {
    const cur = readPidFile(file);
    if (cur && cur.pid !== process.pid && isAlive(cur)) return { held: false, holder: cur };
    writeFileAtomic(file, JSON.stringify(mine) + '\n', { mode: 0o600 });
    return {
      held: true,
      release: () =>
        underMutex(file, () => {
          if (readPidFile(file)?.pid === process.pid) rmSync(file, { force: true });
        }),
    };
  });
}
