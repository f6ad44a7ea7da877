/**
 * Start-up caches for the project's own modules, per thread, in one private
 * directory: type-stripped sources, and in the project's worker threads
 * Node's V8 code cache as well.
 *
 * Node 22 strips the types of every .ts file each time it loads it, in each
 * thread, and its compile cache (module.enableCompileCache) holds only V8
 * code, not the stripping (later Node lines cache that: nodejs/node#56629).
 * The stripper is a WebAssembly compiler whose memory only grows: about
 * 35 MB and 60–90 ms per thread for the files a connection loads. So a load
 * hook here keeps each file's stripped source, by the hash of its text, and
 * a thread that finds every file there never starts the stripper. The
 * output is Node's own (the same stripper, strip mode, the same sourceURL),
 * so behaviour and stack traces are as without the cache.
 *
 * The directory holds code this process runs, so it must be ours alone:
 * `albedo/compile` under the user's cache directory ($XDG_CACHE_HOME, else
 * ~/.cache), not a shared temporary directory; checked from the root down
 * and held open (protocol/private-dir.ts: every directory on the way this
 * user's or root's and writable by no one else unless sticky, so an
 * `albedo/` another user made, or a shared $XDG_CACHE_HOME, turns the caches
 * off), mode 0700, or the caches are off. Its files are opened through the
 * held descriptor (`/proc/self/fd/N/…`), and workers use the descriptor the
 * main thread holds. An entry is read only through a descriptor opened
 * without following links, and only if it is a regular file of ours, mode
 * 0600, with one link; it ends with the SHA-256 of its file name and the
 * code it holds, so a truncated or damaged entry (a crash before the data
 * reached the disk) is stripped again, never run, and neither is an entry
 * renamed to another's name. Entries are written to a fresh random name
 * (`wx`) and renamed into place. Node's V8 code cache goes to `v8/` in the
 * same directory, by its real path (see codeCacheDir).
 * Nothing here ever fails a start: a cache that cannot be read or written is
 * only slower. NODE_DISABLE_COMPILE_CACHE turns both caches off.
 *
 * This module imports only built-ins and protocol/private-dir.ts (which
 * imports only built-ins): a worker's entry (`workerEntry`) runs its
 * stripped text from a data: URL, that module's stripped text inlined as
 * another, before anything else of the project.
 */
import * as nodeModule from 'node:module';
import { createHash } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { heldDir, openPrivateDir, type PrivateDir } from '../protocol/private-dir.ts';

/** Per thread: the directory in use, or null once the caches were found unusable. */
const STATE = Symbol.for('albedo.compile-cache');
/** protocol/private-dir.ts (a function: in a worker's data: entry, import.meta.url is no base). */
const privateDirModule = (): URL => new URL('../protocol/private-dir.ts', import.meta.url);

type Hooks = { load(url: string, context: object, next: (url: string, context?: object) => LoadResult): LoadResult };
type LoadResult = { format?: string | null; source?: string | ArrayBuffer | ArrayBufferView; shortCircuit?: boolean };
// registerHooks (22.15) and stripTypeScriptTypes (22.13) are newer than the engines field: looked up, not imported by name.
const { registerHooks, stripTypeScriptTypes, enableCompileCache } = nodeModule as unknown as {
  registerHooks?: (hooks: Hooks) => unknown;
  stripTypeScriptTypes?: (code: string, opts: { mode: 'strip'; sourceUrl: string }) => string;
  enableCompileCache?: (dir?: string) => unknown;
};

/** The private cache directory, checked and held, or null when it cannot be made or is not ours alone. */
function privateDir(): PrivateDir | null {
  if (process.getuid?.() === undefined) return null;
  const base = process.env.XDG_CACHE_HOME || (os.homedir() ? path.join(os.homedir(), '.cache') : '');
  if (!path.isAbsolute(base)) return null;
  try {
    return openPrivateDir(path.join(base, 'albedo', 'compile'), { create: true, forbid: 0o077 });
  } catch {
    return null;
  }
}

/** Strips as Node's loader does; the experimental-feature warning of the public function is not the embedder's business. */
function strip(source: string, url: string): string {
  const emit = process.emitWarning;
  process.emitWarning = function (this: unknown, warning: unknown, ...rest: unknown[]) {
    if (typeof warning === 'string' && warning.includes('stripTypeScriptTypes')) return;
    return (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return stripTypeScriptTypes!(source, { mode: 'strip', sourceUrl: url });
  } finally {
    process.emitWarning = emit;
  }
}

const SEAL = '\n//# albedo-sha256=';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
/** An entry's seal: its file name is part of it, so an entry renamed to another's name is not taken for it. */
const sealOf = (name: string, js: string): string => sha256(`${name}\0${js}`);

/** An entry's code if it is ours alone (see the module's comment), whole, and sealed for `name`; null otherwise. */
function readEntry(dir: PrivateDir, name: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(dir.file(name), constants.O_RDONLY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0 || st.nlink !== 1) return null;
    const text = readFileSync(fd, 'utf8');
    const at = text.lastIndexOf(SEAL);
    if (at < 0) return null;
    const js = text.slice(0, at);
    return text.slice(at + SEAL.length).trimEnd() === sealOf(name, js) ? js : null;
  } catch {
    return null; // not cached yet, or unreadable
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function cachedStrip(dir: PrivateDir, url: string, source: string): string {
  const name = `${sha256(`${process.versions.node}\0${process.versions.amaro}\0${url}\0${source}`)}.js`;
  const cached = readEntry(dir, name);
  if (cached !== null) return cached;
  const js = strip(source, url);
  // Written whole under a fresh name nobody can have planted (wx), then renamed: a reader never sees half a file.
  let tmp: string | undefined;
  try {
    tmp = dir.file(`.${randomBytes(8).toString('hex')}.tmp`);
    writeFileSync(tmp, `${js}${SEAL}${sealOf(name, js)}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, dir.file(name));
  } catch {
    if (tmp) rmSync(tmp, { force: true }); // only slower next time
  }
  return js;
}

/**
 * `v8/` in the checked directory for Node's code cache: made 0700, a directory of ours and not a link, or undefined.
 * Named by its real path, not through the held descriptor: Node hands the directory to the processes this one starts
 * (NODE_COMPILE_CACHE), where `/proc/self/fd/N` is another file or none. The ancestor check already keeps other users
 * from swapping any directory on that path.
 */
function codeCacheDir(dir: PrivateDir): string | undefined {
  try {
    const v8 = path.join(dir.real, 'v8');
    try {
      mkdirSync(v8, { mode: 0o700 });
    } catch {
      /* there already */
    }
    const st = lstatSync(v8);
    return st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o077) === 0 ? v8 : undefined;
  } catch {
    return undefined;
  }
}

/** The project's root as a file: URL ending in `/`. */
function projectRoot(): string {
  return new URL('../', import.meta.url).href;
}

/**
 * Turns the cache of stripped sources on in this thread, for the project's
 * .ts files under `root` (default: this checkout) loaded from now on; with
 * `codeCache`, Node's code cache too, which covers every module the thread
 * loads (so only in the project's own worker threads: an embedder's thread
 * keeps its own choice, for its coverage say). Idempotent; returns the
 * directory, or null when the caches are off (NODE_DISABLE_COMPILE_CACHE,
 * or no private directory). Node older than 22.15, transformed types or
 * --enable-source-maps leave Node's own stripping in place.
 */
export function enableCompileCaches(opts: { root?: string; codeCache?: boolean; held?: { fd: number; real: string } } = {}): string | null {
  const g = globalThis as Record<symbol, PrivateDir | null | undefined>;
  if (g[STATE] !== undefined) return g[STATE]?.path ?? null;
  g[STATE] = null;
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return null;
  // A worker takes the directory its starter checked and holds (threads share descriptors).
  const dir = opts.held ? heldDir(opts.held.fd, opts.held.real) : privateDir();
  if (!dir) return null;
  g[STATE] = dir;
  const root = opts.root ?? projectRoot();
  try {
    // An embedder's NODE_COMPILE_CACHE wins, as Node's documentation asks; else only v8/ of the held directory.
    if (opts.codeCache) {
      const v8 = process.env.NODE_COMPILE_CACHE ? undefined : codeCacheDir(dir);
      if (v8 || process.env.NODE_COMPILE_CACHE) enableCompileCache?.(v8);
    }
  } catch {
    // Only slower.
  }
  // --enable-source-maps makes Node's loader emit a map as well as a sourceURL: those runs keep Node's own stripping.
  const maps = process.execArgv.includes('--enable-source-maps') || /(^|\s)--enable-source-maps(\s|$)/.test(process.env.NODE_OPTIONS ?? '');
  if (!registerHooks || !stripTypeScriptTypes || process.features.typescript !== 'strip' || maps) return dir.path;
  registerHooks({
    load(url, context, nextLoad) {
      const r = nextLoad(url, context);
      if (r.format !== 'module-typescript' || r.source === undefined || !url.startsWith(root) || url.includes('/node_modules/')) return r;
      // Decoded as Node's loader decodes it (a byte-order mark dropped).
      const text = typeof r.source === 'string' ? r.source : decoder.decode(r.source as Uint8Array);
      return { format: 'module', source: cachedStrip(dir, url, text), shortCircuit: true };
    },
  });
  return dir.path;
}

const decoder = new TextDecoder();
let entryText: string | undefined;

/**
 * What to start a worker thread with so that `host` (a file: URL or path of
 * the project) loads with the caches on, Node's code cache included: a data:
 * URL module that turns them on in the new thread, then imports `host`.
 * With the caches off in this thread, `host` itself (a URL as a URL object).
 */
export function workerEntry(host: string | URL): string | URL {
  enableCompileCaches();
  const dir = (globalThis as Record<symbol, PrivateDir | null | undefined>)[STATE];
  // Worker takes a path or a URL object, not a URL's text.
  if (!dir) return typeof host === 'string' && host.startsWith('file:') ? new URL(host) : host;
  const hostUrl = host instanceof URL ? host.href : host.startsWith('file:') ? host : pathToFileURL(host).href;
  try {
    const self = import.meta.url;
    if (entryText === undefined) {
      // The one module this one imports goes inline too, as a data: URL of its stripped text (a data: URL resolves no relative import).
      const inner = cachedStrip(dir, privateDirModule().href, readFileSync(privateDirModule(), 'utf8'));
      const text = cachedStrip(dir, self, readFileSync(fileURLToPath(self), 'utf8'));
      const spec = "from '../protocol/private-dir.ts'";
      if (!text.includes(spec)) throw new Error('no import of private-dir.ts to inline');
      entryText = text.replace(spec, `from ${JSON.stringify(`data:text/javascript,${encodeURIComponent(inner)}`)}`);
    }
  } catch {
    return typeof host === 'string' && host.startsWith('file:') ? new URL(host) : host;
  }
  const held = JSON.stringify({ fd: dir.fd, real: dir.real });
  const start =
    `\nenableCompileCaches({ root: ${JSON.stringify(projectRoot())}, codeCache: true, held: ${held} });\n` +
    `await import(${JSON.stringify(hostUrl)});\n`;
  return new URL(`data:text/javascript,${encodeURIComponent(entryText + start)}`);
}
