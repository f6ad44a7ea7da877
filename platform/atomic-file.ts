/**
 * Replacing a file so that a reader, or a crash, sees the old file or the new
 * one and never part of one: a temporary file beside it (same directory, so
 * the rename is atomic), created exclusively under a fresh random name (never
 * opened through a file or link already there: a name nobody could guess has
 * nothing planted at it), written and fsynced, renamed over, and the
 * directory fsynced (the rename is durable only once the directory entry is).
 *
 * The one copy for every file Albedo keeps: extensions.json and the write
 * journal (services/settings), creds.json (services/oauth/store.ts),
 * daemon.json and daemon.lock (daemon/). Built-ins only, so any layer and
 * any thread may load it.
 *
 * Not used by kernel/compile-cache.ts on purpose: its entries are a cache
 * sealed with their own digest (a torn one is stripped again, never run), so
 * they are written without fsync, and that module may load nothing of ours
 * but protocol/private-dir.ts (a worker's data: entry inlines them).
 */
import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { isAlive } from './process.ts';

export interface AtomicWriteOptions {
  /** The new file's mode; default: the mode of the file it replaces, else 0600. */
  mode?: number;
  /** Fault injection for tests: called just before the rename; throwing fails the write there and leaves `file` as it was. */
  beforeRename?: () => void;
}

/**
 * Replaces `file` with `data` (see the module's comment), making its
 * directory first when missing (0700). Any failure removes the temporary
 * file and leaves `file` as it was.
 */
export function writeFileAtomic(file: string, data: string | Buffer, opts: AtomicWriteOptions = {}): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let mode = opts.mode ?? 0o600;
  if (opts.mode === undefined) {
    try {
      mode = statSync(file).mode & 0o777;
    } catch {
      // A new file.
    }
  }
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'wx', mode);
  try {
    try {
      writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    opts.beforeRename?.();
    renameSync(tmp, file);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
  syncDir(dir);
  removeLeftovers(dir, path.basename(file));
}

/** A temporary file older than this, of a writer that is gone, was left by a writer killed before its rename. */
const LEFTOVER_AGE_MS = 60_000;

/**
 * Removes the temporary files of `base` that writers killed between creating and renaming them left (a copy of
 * creds.json's tokens would outlive a sign-out): those of another pid that is not alive, older than a minute (never
 * a live writer's, never one of this process's threads). Best effort: it never fails the write it follows.
 */
function removeLeftovers(dir: string, base: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const prefix = `.${base}.`;
  for (const name of names) {
    const m = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]{8}\.tmp$/.exec(name.slice(prefix.length)) : null;
    if (!m || Number(m[1]) === process.pid || isAlive({ pid: Number(m[1]), start: null })) continue;
    const leftover = path.join(dir, name);
    try {
      const st = lstatSync(leftover);
      if (st.isFile() && Date.now() - st.mtimeMs > LEFTOVER_AGE_MS) unlinkSync(leftover);
    } catch {
      // Gone meanwhile.
    }
  }
}

/**
 * Writes all of `buf`: write(2) near a file size limit or on a full disk writes what fits and returns that count (the
 * next write fails with EFBIG or ENOSPC), and a file renamed into place after one short write would be a part of itself.
 */
function writeAll(fd: number, buf: Buffer): void {
  for (let at = 0; at < buf.length;) {
    const n = writeSync(fd, buf, at, buf.length - at);
    // A regular file never answers 0 to a write of something; were it to, looping would never end.
    if (n <= 0) throw Object.assign(new Error('write: no progress'), { code: 'EIO' });
    at += n;
  }
}

/** Removes `file` (restoring "absent"), durably: an absent file is no error. */
export function removeFileDurably(file: string): void {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  syncDir(path.dirname(file));
}

/** Makes the directory's entries durable; best effort where a directory cannot be opened for sync. */
export function syncDir(dir: string): void {
  try {
    const d = openSync(dir, 'r');
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  }
}
