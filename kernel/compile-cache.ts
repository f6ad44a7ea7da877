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
 * `albedo-compile-cache-<uid>` under the temporary directory, mode 0700,
 * owned by this user and not a link; anything else turns the caches off.
 * Nothing here ever fails a start: a cache that cannot be read or written is
 * only slower. NODE_DISABLE_COMPILE_CACHE turns both caches off.
 *
 * This module imports only built-ins: a worker's entry (`workerEntry`) runs
 * its stripped text from a data: URL, before anything else of the project.
 */
import * as nodeModule from 'node:module';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { threadId } from 'node:worker_threads';

/** Per thread: the directory in use, or null once the caches were found unusable. */
const STATE = Symbol.for('albedo.compile-cache');

type Hooks = { load(url: string, context: object, next: (url: string, context?: object) => LoadResult): LoadResult };
type LoadResult = { format?: string | null; source?: string | ArrayBuffer | ArrayBufferView; shortCircuit?: boolean };
// registerHooks (22.15) and stripTypeScriptTypes (22.13) are newer than the engines field: looked up, not imported by name.
const { registerHooks, stripTypeScriptTypes, enableCompileCache } = nodeModule as unknown as {
  registerHooks?: (hooks: Hooks) => unknown;
  stripTypeScriptTypes?: (code: string, opts: { mode: 'strip'; sourceUrl: string }) => string;
  enableCompileCache?: (dir?: string) => unknown;
};

/** The private cache directory, or null when it cannot be made or is not ours alone. */
function privateDir(): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const dir = path.join(os.tmpdir(), `albedo-compile-cache-${uid}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & 0o077) === 0 ? dir : null;
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

function cachedStrip(dir: string, url: string, source: string): string {
  const key = createHash('sha256').update(`${process.versions.node}\0${process.versions.amaro}\0${url}\0`).update(source).digest('hex');
  const file = path.join(dir, `${key}.js`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    // Not cached yet (or unreadable): strip it now.
  }
  const js = strip(source, url);
  try {
    // Written whole and renamed, so another process or thread never reads half a file.
    const tmp = `${file}.${process.pid}.${threadId}.tmp`;
    writeFileSync(tmp, js, { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // Only slower next time.
  }
  return js;
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
export function enableCompileCaches(opts: { root?: string; codeCache?: boolean } = {}): string | null {
  const g = globalThis as Record<symbol, string | null | undefined>;
  if (g[STATE] !== undefined) return g[STATE];
  g[STATE] = null;
  if (process.env.NODE_DISABLE_COMPILE_CACHE) return null;
  const dir = privateDir();
  if (!dir) return null;
  g[STATE] = dir;
  const root = opts.root ?? projectRoot();
  try {
    // An embedder's NODE_COMPILE_CACHE wins, as Node's documentation asks.
    if (opts.codeCache) enableCompileCache?.(process.env.NODE_COMPILE_CACHE ? undefined : path.join(dir, 'v8'));
  } catch {
    // Only slower.
  }
  // --enable-source-maps makes Node's loader emit a map as well as a sourceURL: those runs keep Node's own stripping.
  const maps = process.execArgv.includes('--enable-source-maps') || /(^|\s)--enable-source-maps(\s|$)/.test(process.env.NODE_OPTIONS ?? '');
  if (!registerHooks || !stripTypeScriptTypes || process.features.typescript !== 'strip' || maps) return dir;
  registerHooks({
    load(url, context, nextLoad) {
      const r = nextLoad(url, context);
      if (r.format !== 'module-typescript' || r.source === undefined || !url.startsWith(root) || url.includes('/node_modules/')) return r;
      // Decoded as Node's loader decodes it (a byte-order mark dropped).
      const text = typeof r.source === 'string' ? r.source : decoder.decode(r.source as Uint8Array);
      return { format: 'module', source: cachedStrip(dir, url, text), shortCircuit: true };
    },
  });
  return dir;
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
  const dir = enableCompileCaches();
  // Worker takes a path or a URL object, not a URL's text.
  if (!dir) return typeof host === 'string' && host.startsWith('file:') ? new URL(host) : host;
  const hostUrl = host instanceof URL ? host.href : host.startsWith('file:') ? host : pathToFileURL(host).href;
  try {
    const self = import.meta.url;
    entryText ??= cachedStrip(dir, self, readFileSync(fileURLToPath(self), 'utf8'));
  } catch {
    return typeof host === 'string' && host.startsWith('file:') ? new URL(host) : host;
  }
  const start = `\nenableCompileCaches({ root: ${JSON.stringify(projectRoot())}, codeCache: true });\nawait import(${JSON.stringify(hostUrl)});\n`;
  return new URL(`data:text/javascript,${encodeURIComponent(entryText + start)}`);
}
