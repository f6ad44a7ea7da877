/**
 * A read_resource that exports (issue 25, item 6): its blobs written to new
 * files in the session's working directory (SessionOptions.cwd) instead of
 * reaching the model as base64. The owner's thread does it (the daemon's, or
 * the embedder's: the user's own process), after the read, whichever path
 * the read took (straight to the connection or through the composer).
 *
 * Before the read is sent (planExport), everything that can be checked is:
 * the session has a working directory, it exists and is not `$ALBEDO_HOME`
 * or inside it; a `file` given is a relative path with no `..`, no hidden
 * part (`.git/…`, `.envrc`: files that configure tools), no empty part, each
 * part within NAME_MAX, its directory an existing one inside the working
 * directory and outside the home once every link is resolved, and the file
 * not there yet. Each refusal is ALBEDO_INVALID_ARGUMENT, not run, the
 * resource not read (`data.export` says why, `data.read: false`).
 *
 * After the read (exportResult), each blob content goes to its own file
 * (api/export-blob.ts), one after the other; in the result the model sees it
 * becomes a text content naming the path, the byte count and the type, and
 * `_meta["albedo/export"]` lists the files. All or nothing: when one fails,
 * the files this read already wrote are removed and the call fails
 * (`data.read: true`). A `file` names the first blob's file; the next ones
 * get `-2`, `-3`… before the extension. Without `file`, the name comes from
 * the content's URI (its last path segment, reduced to `[A-Za-z0-9._-]`, its
 * own extension dropped for one from the mimeType: madeName), and a name
 * taken gets the next free number instead. At most MAX_EXPORTED blobs per
 * read; a file whose directory turned out (after the read) to resolve outside
 * the working directory is removed and the export fails.
 */
import { lstat, realpath, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { AlbedoError } from '../protocol/errors.ts';
import { persistResourceBlob, type PersistOptions } from './export-blob.ts';

/** What the call asked (services/composer/routing.ts exportOf). */
export interface ExportAsk {
  file?: string;
}

/** Where one read's blobs go, as checked before the read was sent. */
export interface ExportPlan {
  /** The working directory as the session names it: the paths shown are under it. */
  cwd: string;
  /** Its real path (links resolved): the files are created under it. */
  real: string;
  /** `file`, when given: its real directory and its name. */
  target?: { dir: string; name: string };
}

/** One file written, as `_meta["albedo/export"]` lists it. */
export interface Exported {
  /** The index of the content it held in `contents`. */
  index: number;
  uri: string;
  /** Its path under the working directory as the session names it, and relative to it. */
  path: string;
  file: string;
  bytes: number;
  mimeType?: string;
}

/** The most names tried for a blob without `file` (`name`, `name-2` … `name-100`). */
const MAX_NUMBERED = 100;
/** The most blobs one read exports: a server cannot fill the working directory with thousands of files. */
export const MAX_EXPORTED = 100;
/** A mimeType shown to the model and listed in `_meta`: a plain `type/subtype`, short; any other is left out. */
const SHOWN_TYPE = /^[\w.+-]{1,50}\/[\w.+-]{1,50}$/;
/** The longest name made from a URI (characters, before the extension). */
const MAX_MADE = 100;
/** NAME_MAX of the usual file systems, in bytes. */
const NAME_MAX = 255;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const refuse = (reason: string, message: string, extra: Obj = {}): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', `${message}; the resource was not read`, {
    outcome: 'not_run',
    data: { export: reason, ...extra, read: false },
  });

/** Whether `p` is `dir` or inside it (both real paths). */
function within(p: string, dir: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}

/** `p` with its links resolved as far as it exists (the rest appended): where a home that is not made yet would be. */
async function resolved(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    const parent = path.dirname(p);
    return parent === p ? p : path.join(await resolved(parent), path.basename(p));
  }
}

/** A real directory, or undefined when `p` is missing or not a directory. */
async function realDir(p: string): Promise<string | undefined> {
  try {
    const real = await realpath(p);
    return (await stat(real)).isDirectory() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks a session's working directory before it is taken (AlbedoSession's open): absolute, an existing directory,
 * not the home nor inside it. ALBEDO_INVALID_ARGUMENT, not run.
 */
export async function checkWorkingDir(cwd: string, home: string | null): Promise<void> {
  const bad = (message: string): AlbedoError =>
    new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data: { path: ['cwd'] } });
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd) || cwd.includes('\0')) throw bad('session options: cwd must be an absolute path');
  const real = await realDir(cwd);
  if (!real) throw bad('session options: cwd is not an existing directory');
  if (home !== null && within(real, await resolved(home))) throw bad("session options: cwd may not be Albedo's home or inside it");
}

/**
 * Where a read's blobs will go, checked before the read is sent (module comment). `cwd`: the session's working
 * directory; `home`: $ALBEDO_HOME (null: none).
 */
export async function planExport(cwd: string | undefined, home: string | null, ask: ExportAsk): Promise<ExportPlan> {
  if (cwd === undefined) {
    throw refuse('no_working_directory', 'read_resource cannot export: the session has no working directory (open it with `cwd`)');
  }
  const real = await realDir(cwd);
  if (!real) throw refuse('working_directory_missing', `read_resource cannot export: the working directory ${cwd} is not a directory`);
  const realHome = home === null ? undefined : await resolved(home);
  if (realHome !== undefined && within(real, realHome)) {
    throw refuse('inside_home', "read_resource cannot export: the working directory is Albedo's home or inside it");
  }
  if (ask.file === undefined) return { cwd, real };
  const file = ask.file;
  const parts = file.split(path.sep === '/' ? '/' : /[\\/]/);
  const bad = (reason: string, why: string): AlbedoError =>
    refuse(reason, `read_resource \`file\` ${JSON.stringify(file)}: ${why}`, { argument: 'file' });
  if (path.isAbsolute(file) || path.win32.isAbsolute(file)) throw bad('absolute', 'must be relative to the working directory');
  if (parts.some((p) => p === '..')) throw bad('outside', 'may not name `..`');
  if (parts.some((p) => p === '' || p === '.')) throw bad('bad_file', 'has an empty part (or a trailing /)');
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(file)) throw bad('bad_file', 'may not hold control characters');
  if (parts.some((p) => p.startsWith('.'))) throw bad('hidden', 'may not name a hidden file or directory');
  if (parts.some((p) => Buffer.byteLength(p) > NAME_MAX)) throw bad('bad_file', `has a part over ${NAME_MAX} bytes`);
  const dir = await realDir(path.join(real, ...parts.slice(0, -1)));
  if (!dir) throw bad('no_such_directory', 'is not in an existing directory');
  if (!within(dir, real)) throw bad('outside', 'resolves outside the working directory');
  if (realHome !== undefined && within(dir, realHome)) throw bad('inside_home', "resolves inside Albedo's home");
  const name = parts.at(-1)!;
  const there = await lstat(path.join(dir, name)).then(
    () => true,
    () => false,
  );
  if (there) {
    throw refuse('exists', `read_resource \`file\`: ${path.join(cwd, file)} exists already`, {
      argument: 'file',
      file: path.join(cwd, file),
    });
  }
  return { cwd, real, target: { dir, name } };
}

/**
 * The result with each blob content written to its file and replaced by a text naming it (module comment). A
 * result with no blob is returned as it is. Throws the export's AlbedoError (api/export-blob.ts) with
 * `data.read: true`, the files of this read removed.
 */
export async function exportResult(result: unknown, plan: ExportPlan, opts: PersistOptions = {}): Promise<unknown> {
  if (!isObj(result) || !Array.isArray(result.contents)) return result;
  const contents = result.contents as unknown[];
  const blobs = contents.filter((c) => isObj(c) && typeof c.blob === 'string').length;
  if (blobs > MAX_EXPORTED) {
    const why = `the resource holds ${blobs} binary contents, more than the ${MAX_EXPORTED} one read may export; nothing was written`;
    throw new AlbedoError('ALBEDO_EXPORT_FAILED', why, { outcome: 'not_run', data: { export: 'too_many', read: true } });
  }
  const out = [...contents];
  const done: Array<Exported & { real: string }> = [];
  try {
    for (const [i, c] of contents.entries()) {
      if (!isObj(c) || typeof c.blob !== 'string') continue;
      const uri = typeof c.uri === 'string' ? c.uri : '';
      // The server's mimeType reaches the model only as a plain type/subtype (not text in Albedo's voice).
      const mimeType = typeof c.mimeType === 'string' && SHOWN_TYPE.test(c.mimeType) ? c.mimeType : undefined;
      const names = plan.target
        ? [path.join(plan.target.dir, numbered(plan.target.name, done.length + 1))]
        : Array.from({ length: MAX_NUMBERED }, (_, n) => path.join(plan.real, numbered(madeName(uri, mimeType), n + 1)));
      const p = await persistResourceBlob(c.blob, names, opts);
      done.push({ index: i, uri, path: p.path, file: '', bytes: p.bytes, real: p.path });
      // The directory checked before the read may have been swapped for a link meanwhile: the file must still be there.
      await stillInside(p.path, plan);
      done.pop();
      const file = path.relative(plan.real, p.path);
      const shown = path.join(plan.cwd, file);
      done.push({ index: i, uri, path: shown, file, bytes: p.bytes, ...(mimeType ? { mimeType } : {}), real: p.path });
      const what = `${mimeType ? `${mimeType}, ` : ''}${p.bytes.toLocaleString('en-US')} bytes`;
      const text = `[Albedo: this resource's binary content (${what}) was written to the file ${shown}; it is not in this result.]`;
      out[i] = { uri, mimeType: 'text/plain', text };
    }
  } catch (err) {
    throw await undo(
      err,
      done.map((d) => d.real),
    );
  }
  if (!done.length) return result;
  const meta = isObj(result._meta) ? result._meta : {};
  return { ...result, contents: out, _meta: { ...meta, 'albedo/export': done.map(({ real: _r, ...d }) => d) } };
}

/** The files this read wrote removed (no result will name them); the error said as the export's, `leftover` when one stays. */
async function undo(err: unknown, files: string[]): Promise<AlbedoError> {
  const e = AlbedoError.is(err)
    ? err
    : new AlbedoError('ALBEDO_EXPORT_FAILED', `the export failed: ${String(err)}`, { outcome: 'not_run' });
  const stay: string[] = [];
  for (const f of files) {
    await unlink(f).catch((u: NodeJS.ErrnoException) => {
      if (u.code !== 'ENOENT') stay.push(f);
    });
  }
  const data = { ...(isObj(e.data) ? e.data : {}), read: true, ...(stay.length ? { leftover: stay[0] } : {}) };
  return new AlbedoError(e.code, e.message, { outcome: stay.length ? 'unknown' : e.outcome, data });
}

/** Throws (and the caller removes the file) when `file` no longer resolves inside the working directory. */
async function stillInside(file: string, plan: ExportPlan): Promise<void> {
  const dir = await realDir(path.dirname(file));
  if (dir !== undefined && within(dir, plan.real)) return;
  const why = 'the export target moved out of the working directory while the resource was read (a directory replaced by a link)';
  throw new AlbedoError('ALBEDO_EXPORT_FAILED', why, { outcome: 'not_run', data: { export: 'outside', read: true } });
}

/** `name` for the first, `stem-N.ext` for the N-th. */
export function numbered(name: string, n: number): string {
  if (n <= 1) return name;
  const ext = path.extname(name);
  return `${ext ? name.slice(0, -ext.length) : name}-${n}${ext}`;
}

const EXTENSIONS: Record<string, string> = {
  'application/gzip': 'gz',
  'application/octet-stream': 'bin',
  'application/pdf': 'pdf',
  'application/zip': 'zip',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
  'image/gif': 'gif',
  'image/jpeg': 'jpg',
  'image/png': 'png',
  'image/svg+xml': 'svg',
  'image/webp': 'webp',
  'text/csv': 'csv',
  'text/html': 'html',
  'text/markdown': 'md',
  'text/plain': 'txt',
  'video/mp4': 'mp4',
};

/**
 * A file name made from a content's URI: its last path segment (decoded) without its extension, reduced to
 * `[A-Za-z0-9._-]` with no leading dot, at most MAX_MADE characters, `resource-` before one with no letter, and an
 * extension from the mimeType, from a list of data formats only (`bin` for any other): the server never chooses a
 * name tools act on (`conftest.py`, `package.json`, `Makefile`, a script).
 */
export function madeName(uri: string, mimeType?: string): string {
  let last: string;
  try {
    const u = new URL(uri);
    last = u.pathname.split('/').filter(Boolean).at(-1) ?? u.hostname;
  } catch {
    last = uri.split(/[/?#]/).filter(Boolean).at(-1) ?? '';
  }
  try {
    last = decodeURIComponent(last);
  } catch {
    // As it is.
  }
  let name = last
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._-]+/, '')
    .slice(0, MAX_MADE)
    .replace(/[._-]+$/, '');
  if (/\.[A-Za-z0-9]{1,8}$/.test(name)) name = name.slice(0, -path.extname(name).length).replace(/[._-]+$/, '');
  if (!/[A-Za-z]/.test(name)) name = name ? `resource-${name}` : 'resource';
  const type = (mimeType ?? '').split(';')[0]!.trim().toLowerCase();
  return `${name}.${Object.hasOwn(EXTENSIONS, type) ? EXTENSIONS[type] : 'bin'}`;
}
