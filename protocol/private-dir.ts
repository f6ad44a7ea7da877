/**
 * A directory that must be this user's alone ($ALBEDO_HOME, the compile
 * cache), checked from the root down and then held open, so that what is
 * read later is read from the directory that was checked.
 *
 * Whoever can rename an entry of any directory on the way can swap what
 * lies below it after the check; whoever owns the directory can put their
 * own files in it. So every directory on the way must belong to this user
 * or to root and be writable by neither group nor others — unless it is
 * sticky (/tmp), where others may write but rename only their own entries:
 * then the entry taken from it must be this user's or root's. A symbolic
 * link on the way must be this user's or root's and is followed, its
 * target checked the same way from where it points; the directory itself
 * must not be a link, must be this user's, and writable by no one else
 * (`forbid`: the mode bits it must not have, 0o022 by default). Missing
 * directories are made one at a time, mode 0700, each checked as it comes.
 * Where there are no user ids (Windows), only the last two are checked.
 *
 * Then the directory is opened (O_DIRECTORY | O_NOFOLLOW) and held: on
 * Linux its files are opened through `/proc/self/fd/<fd>/<name>`, which
 * resolves through the held descriptor (in every thread of the process), so
 * a directory renamed away and replaced by a link after the check does not
 * redirect a read. Where there is no /proc, each `file()` first compares
 * the held directory with what its path names now (device and inode) and
 * throws if they differ.
 *
 * It imports only built-ins: the CLI loads it (test/architecture), and a
 * worker's compile-cache entry loads it from a data: URL.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';

/** Why a directory cannot be used: `missing` (it, or a directory on the way, does not exist and was not to be made) or `unsafe`. */
export class PrivateDirError extends Error {
  readonly reason: 'missing' | 'unsafe';
  constructor(reason: 'missing' | 'unsafe', message: string) {
    super(message);
    this.name = 'PrivateDirError';
    this.reason = reason;
  }
}

export interface PrivateDirOptions {
  /** Make missing directories (mode 0700), one at a time. */
  create?: boolean;
  /** Mode bits the directory itself must not have (default 0o022: no one else may write it). */
  forbid?: number;
}

/** A checked directory, held open. */
export interface PrivateDir {
  /** The path it was asked for (for messages). */
  readonly path: string;
  /** Its real path (no links). */
  readonly real: string;
  readonly fd: number;
  /** The path to open things in it through: `/proc/self/fd/<fd>` where that resolves through the descriptor, else `real`. */
  readonly at: string;
  /** Whether `at` goes through the held descriptor. */
  readonly held: boolean;
  /** The path of `name` (one component) in it; without /proc, first checks the path still names the held directory. */
  file(name: string): string;
  close(): void;
}

const MAX_LINKS = 40;
const STICKY = 0o1000;
const mode = (st: Stats): string => (st.mode & 0o7777).toString(8).padStart(4, '0');

interface At {
  dir: string;
  st: Stats;
}

function lstatOrMissing(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new PrivateDirError('unsafe', `${p} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

class Walk {
  readonly uid: number;
  create: boolean;
  links = 0;
  constructor(uid: number, create: boolean) {
    this.uid = uid;
    this.create = create;
  }

  trusted(st: Stats): boolean {
    return st.uid === this.uid || st.uid === 0;
  }

  /** `dir` as a directory on the way: this user's or root's, and writable by no one else unless sticky. */
  checkDir(at: At): void {
    if (!at.st.isDirectory()) throw new PrivateDirError('unsafe', `${at.dir} is not a directory`);
    if (!this.trusted(at.st))
      throw new PrivateDirError('unsafe', `${at.dir} belongs to uid ${at.st.uid}, neither this user (uid ${this.uid}) nor root`);
    if ((at.st.mode & 0o022) !== 0 && (at.st.mode & STICKY) === 0) {
      throw new PrivateDirError('unsafe', `${at.dir} can be written by others (mode ${mode(at.st)}): they could swap what is in it`);
    }
  }

  /** The entry `next` (already lstat'ed) of the checked directory `at`: in a directory others may write, only ours or root's. */
  checkEntry(at: At, next: string, st: Stats): void {
    if ((at.st.mode & 0o022) !== 0 && !this.trusted(st)) {
      throw new PrivateDirError('unsafe', `${next} belongs to uid ${st.uid} in ${at.dir}, which others may write`);
    }
  }

  /** Looks up `name` in the checked directory `at`, making it if missing and allowed. */
  entry(at: At, name: string): { next: string; st: Stats } {
    const next = path.join(at.dir, name);
    let st = lstatOrMissing(next);
    if (!st && this.create) {
      try {
        mkdirSync(next, { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new PrivateDirError('unsafe', `${next} cannot be made (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
        }
      }
      st = lstatOrMissing(next);
    }
    if (!st) throw new PrivateDirError('missing', `${next} does not exist`);
    this.checkEntry(at, next, st);
    return { next, st };
  }

  /** Walks `rel` from the checked directory `from` (or the root, when absolute), following and checking every link. */
  walk(from: At, rel: string): At {
    let at = from;
    if (path.isAbsolute(rel)) {
      const root = path.parse(rel).root;
      at = { dir: root, st: lstatSync(root) };
      this.checkDir(at);
    }
    // Only the platform's separators: on POSIX a backslash is a character of a name, not a step.
    for (const name of rel.split(path.sep === '\\' ? /[\\/]+/ : /\/+/)) {
      if (name === '' || name === '.') continue;
      if (name === '..') {
        const up = path.dirname(at.dir);
        at = { dir: up, st: lstatSync(up) };
        this.checkDir(at);
        continue;
      }
      const { next, st } = this.entry(at, name);
      at = st.isSymbolicLink() ? this.follow(at, next, st) : { dir: next, st };
      this.checkDir(at);
    }
    return at;
  }

  /** A link on the way: ours or root's, and its target walked and checked from the link's directory. */
  follow(at: At, link: string, st: Stats): At {
    if (++this.links > MAX_LINKS) throw new PrivateDirError('unsafe', `too many symbolic links on the way to ${link}`);
    if (!this.trusted(st)) throw new PrivateDirError('unsafe', `${link} is a symbolic link of uid ${st.uid}`);
    // A link's target is only followed, never made.
    const create = this.create;
    this.create = false;
    try {
      return this.walk(at, readlinkSync(link));
    } finally {
      this.create = create;
    }
  }
}

/**
 * Checks `dir` and every directory on the way (see the module's comment)
 * and returns the real directory reached, with its lstat; throws
 * PrivateDirError. Needs a POSIX uid (process.getuid).
 */
function check(dir: string, o: PrivateDirOptions): At {
  const uid = process.getuid?.();
  const abs = path.resolve(dir);
  if (uid === undefined) return unowned(abs, o.create ?? false);
  const w = new Walk(uid, o.create ?? false);
  const parent = w.walk({ dir: '/', st: lstatSync('/') }, path.dirname(abs));
  if (abs === parent.dir || path.basename(abs) === '') throw new PrivateDirError('unsafe', `${abs} is a root directory`);
  const { next, st } = w.entry(parent, path.basename(abs));
  if (st.isSymbolicLink()) throw new PrivateDirError('unsafe', `${abs} is a symbolic link; it must be the directory itself`);
  const at = { dir: next, st };
  final(at, uid, o.forbid ?? 0o022);
  return at;
}

/** Where there are no user ids (Windows): only that it is a directory itself, not a link. */
function unowned(abs: string, create: boolean): At {
  if (create) mkdirSync(abs, { recursive: true, mode: 0o700 });
  const st = lstatOrMissing(abs);
  if (!st) throw new PrivateDirError('missing', `${abs} does not exist`);
  if (st.isSymbolicLink()) throw new PrivateDirError('unsafe', `${abs} is a symbolic link; it must be the directory itself`);
  if (!st.isDirectory()) throw new PrivateDirError('unsafe', `${abs} is not a directory`);
  return { dir: abs, st };
}

function final(at: At, uid: number, forbid: number): void {
  if (!at.st.isDirectory()) throw new PrivateDirError('unsafe', `${at.dir} is not a directory`);
  if (at.st.uid !== uid) throw new PrivateDirError('unsafe', `${at.dir} belongs to uid ${at.st.uid}, not to this user (uid ${uid})`);
  if ((at.st.mode & forbid) !== 0) {
    throw new PrivateDirError('unsafe', `${at.dir} is open to others (mode ${mode(at.st)}); make it yours alone: chmod go-rwx ${at.dir}`);
  }
}

/** Why `dir` is not a private directory of this user's (see the module's comment), or undefined. Nothing is made. */
export function checkPrivatePath(dir: string, o: Omit<PrivateDirOptions, 'create'> = {}): string | undefined {
  try {
    check(dir, o);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

const same = (a: Stats, b: Stats): boolean => a.dev === b.dev && a.ino === b.ino;

/** Checks `dir` (making it first with `create`), opens it and holds it; throws PrivateDirError. */
export function openPrivateDir(dir: string, o: PrivateDirOptions = {}): PrivateDir {
  const checked = check(dir, o);
  let fd: number;
  try {
    fd = openSync(checked.dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    throw new PrivateDirError('unsafe', `${checked.dir} cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!same(st, checked.st)) throw new PrivateDirError('unsafe', `${checked.dir} changed while it was checked`);
    const uid = process.getuid?.();
    if (uid !== undefined) final({ dir: checked.dir, st }, uid, o.forbid ?? 0o022);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return heldDir(fd, checked.dir, path.resolve(dir));
}

/**
 * A PrivateDir for a descriptor another thread of this process opened with
 * openPrivateDir (a worker shares its descriptors): not checked again.
 */
export function heldDir(fd: number, real: string, asked = real): PrivateDir {
  const proc = `/proc/self/fd/${fd}`;
  let held = false;
  try {
    held = same(statSync(proc), fstatSync(fd));
  } catch {
    // No /proc here.
  }
  return {
    path: asked,
    real,
    fd,
    held,
    at: held ? proc : real,
    file(name: string): string {
      if (name === '' || name === '.' || name === '..' || /[\\/]/.test(name))
        throw new PrivateDirError('unsafe', `${JSON.stringify(name)} is not a file name`);
      if (held) return `${proc}/${name}`;
      let now: Stats | null = null;
      try {
        now = lstatSync(real);
      } catch {
        /* gone */
      }
      if (!now || !same(now, fstatSync(fd))) throw new PrivateDirError('unsafe', `${real} was replaced after it was checked`);
      return path.join(real, name);
    },
    close(): void {
      try {
        closeSync(fd);
      } catch {
        /* closed already */
      }
    },
  };
}
