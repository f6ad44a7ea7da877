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
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

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
      if (typeof data === 'string') writeSync(fd, data);
      else writeSync(fd, data);
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
