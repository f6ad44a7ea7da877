// The start-up caches (kernel/compile-cache.ts): a thread that turns them on
// keeps the type-stripped text of each project file it loads in a private
// directory and loads it from there next time, a worker started through
// workerEntry does the same from its first module, and a directory that is
// not ours alone, or cannot be made, turns the caches off without failing
// anything; an entry that is damaged, a link, or not ours alone is stripped
// again, never run. Each case runs in a process of its own with
// XDG_CACHE_HOME pointing at a fresh directory.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { NODE, ROOT, tempHome } from '../helpers.ts';

const cacheDir = (home: string): string => path.join(home, 'albedo', 'compile');
/** An entry as the cache writes one under `file`'s name: the code, then the seal, the SHA-256 of the name and the code. */
const sealed = (file: string, js: string): string =>
  `${js}\n//# albedo-sha256=${createHash('sha256')
    .update(`${path.basename(file)}\0${js}`)
    .digest('hex')}\n`;
const codeOf = (entry: string): string => entry.slice(0, entry.lastIndexOf('\n//# albedo-sha256='));
const CACHE = pathToFileURL(path.join(ROOT, 'kernel', 'compile-cache.ts')).href;
const VERSIONS_FILE = path.join(ROOT, 'protocol', 'versions.ts');
const VERSIONS = pathToFileURL(VERSIONS_FILE).href;
const PLANTED = 'served from the cache';

interface Out {
  dir: string | null;
  main: string;
  worker: string | null;
}

/** Turns the caches on, imports protocol/versions.ts here and in a worker started through workerEntry, and says what each saw. */
function run(t: { teardown(fn: () => unknown): void }, tmp: string, env: Record<string, string> = {}): Out {
  const driver = path.join(tempHome(t), 'driver.mjs');
  writeFileSync(
    driver,
    `
    import { Worker } from 'node:worker_threads';
    const { enableCompileCaches, workerEntry } = await import(${JSON.stringify(CACHE)});
    const dir = enableCompileCaches();
    const { MODERN_VERSION } = await import(${JSON.stringify(VERSIONS)});
    const w = new Worker(workerEntry(${JSON.stringify(VERSIONS)}));
    const worker = await new Promise((resolve) => { w.once('message', resolve); w.once('exit', () => resolve(null)); });
    await w.terminate();
    console.log(JSON.stringify({ dir, main: MODERN_VERSION, worker }));
  `,
  );
  // NODE_OPTIONS cleared: a test runner's --enable-source-maps there would leave only the code cache on.
  const r = spawnSync(NODE, [driver], {
    env: { ...process.env, NODE_OPTIONS: '', XDG_CACHE_HOME: tmp, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`the driver failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Out;
}

const { MODERN_VERSION } = await import('../../protocol/versions.ts');

t.test('a run keeps the stripped text of what it loaded; the next run, and its workers, load it from there', async (t) => {
  const tmp = tempHome(t);
  const dir = cacheDir(tmp);
  const first = run(t, tmp);
  t.same(first, { dir, main: MODERN_VERSION, worker: null }, 'the first run loads the real module');
  t.equal(statSync(dir).mode & 0o777, 0o700, 'the directory is private');
  const source = readFileSync(VERSIONS_FILE, 'utf8');
  const suffix = `\n\n//# sourceURL=${VERSIONS}`;
  const entries = readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => path.join(dir, f));
  const entry = entries.find((f) => codeOf(readFileSync(f, 'utf8')).endsWith(suffix));
  t.ok(entry, 'protocol/versions.ts has an entry');
  const text = codeOf(readFileSync(entry!, 'utf8'));
  t.equal(text.length, source.length + suffix.length, "types are blanked, not removed: positions (and stack traces) are the source's");
  t.notMatch(text, /export type Era/, 'the types are gone');
  t.equal(statSync(entry!).mode & 0o777, 0o600);

  const planted =
    `import { parentPort } from 'node:worker_threads';\n` +
    `export const MODERN_VERSION = ${JSON.stringify(PLANTED)};\nparentPort?.postMessage(MODERN_VERSION);\n`;
  writeFileSync(entry!, sealed(entry!, planted));
  t.same(run(t, tmp), { dir, main: PLANTED, worker: PLANTED }, 'the main thread and a worker load the cached text');

  // Damaged (cut short, say by a crash before it reached the disk), or not sealed: stripped again, and rewritten.
  writeFileSync(entry!, sealed(entry!, planted).slice(0, 40));
  t.same(run(t, tmp), { dir, main: MODERN_VERSION, worker: null }, 'a truncated entry is not run');
  const rewritten = readFileSync(entry!, 'utf8');
  t.ok(sealed(entry!, codeOf(rewritten)) === rewritten && codeOf(rewritten).endsWith(suffix), 'and is written again whole, sealed');
  writeFileSync(entry!, planted);
  t.same(run(t, tmp), { dir, main: MODERN_VERSION, worker: null }, 'an entry without its seal is not run');

  // Not ours alone: readable by others, or a link (to a file that would pass), is not run either.
  writeFileSync(entry!, sealed(entry!, planted), { mode: 0o644 });
  chmodSync(entry!, 0o644);
  t.same(run(t, tmp), { dir, main: MODERN_VERSION, worker: null }, 'an entry others may read or write is not run');
  const elsewhere = path.join(tempHome(t), 'planted.js');
  writeFileSync(elsewhere, sealed(entry!, planted), { mode: 0o600 });
  rmSync(entry!);
  symlinkSync(elsewhere, entry!);
  t.same(run(t, tmp), { dir, main: MODERN_VERSION, worker: null }, 'an entry that is a link is not followed');
});

t.test('a cache directory others may write to turns the caches off; nothing is written there', async (t) => {
  const tmp = tempHome(t);
  const dir = cacheDir(tmp);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  t.same(run(t, tmp), { dir: null, main: MODERN_VERSION, worker: null });
  t.same(readdirSync(dir), []);
});

t.test('a file where the directory should be, or NODE_DISABLE_COMPILE_CACHE: caches off, everything loads', async (t) => {
  const tmp = tempHome(t);
  mkdirSync(path.join(tmp, 'albedo'));
  writeFileSync(cacheDir(tmp), 'not a directory');
  t.same(run(t, tmp), { dir: null, main: MODERN_VERSION, worker: null });
  const other = tempHome(t);
  t.same(run(t, other, { NODE_DISABLE_COMPILE_CACHE: '1' }), { dir: null, main: MODERN_VERSION, worker: null });
  t.same(readdirSync(other), [], 'no directory was made');
});
