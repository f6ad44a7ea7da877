// The start-up caches (kernel/compile-cache.ts): a thread that turns them on
// keeps the type-stripped text of each project file it loads in a private
// directory and loads it from there next time, a worker started through
// workerEntry does the same from its first module, and a directory that is
// not ours alone, or cannot be made, turns the caches off without failing
// anything. Each case runs in a process of its own with TMPDIR pointing at a
// fresh directory.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { NODE, ROOT, tempHome } from '../helpers.ts';

const uid = process.getuid!();
const CACHE = pathToFileURL(path.join(ROOT, 'kernel', 'compile-cache.ts')).href;
const VERSIONS_FILE = path.join(ROOT, 'protocol', 'versions.ts');
const VERSIONS = pathToFileURL(VERSIONS_FILE).href;
const PLANTED = 'served from the cache';

interface Out { dir: string | null; main: string; worker: string | null }

/** Turns the caches on, imports protocol/versions.ts here and in a worker started through workerEntry, and says what each saw. */
function run(t: { teardown(fn: () => unknown): void }, tmp: string, env: Record<string, string> = {}): Out {
  const driver = path.join(tempHome(t), 'driver.mjs');
  writeFileSync(driver, `
    import { Worker } from 'node:worker_threads';
    const { enableCompileCaches, workerEntry } = await import(${JSON.stringify(CACHE)});
    const dir = enableCompileCaches();
    const { MODERN_VERSION } = await import(${JSON.stringify(VERSIONS)});
    const w = new Worker(workerEntry(${JSON.stringify(VERSIONS)}));
    const worker = await new Promise((resolve) => { w.once('message', resolve); w.once('exit', () => resolve(null)); });
    await w.terminate();
    console.log(JSON.stringify({ dir, main: MODERN_VERSION, worker }));
  `);
  // NODE_OPTIONS cleared: a test runner's --enable-source-maps there would leave only the code cache on.
  const r = spawnSync(NODE, [driver], { env: { ...process.env, NODE_OPTIONS: '', TMPDIR: tmp, ...env }, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`the driver failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Out;
}

const { MODERN_VERSION } = await import('../../protocol/versions.ts');

t.test('a run keeps the stripped text of what it loaded; the next run, and its workers, load it from there', async (t) => {
  const tmp = tempHome(t);
  const dir = path.join(tmp, `albedo-compile-cache-${uid}`);
  const first = run(t, tmp);
  t.same(first, { dir, main: MODERN_VERSION, worker: null }, 'the first run loads the real module');
  t.equal(statSync(dir).mode & 0o777, 0o700, 'the directory is private');
  const source = readFileSync(VERSIONS_FILE, 'utf8');
  const suffix = `\n\n//# sourceURL=${VERSIONS}`;
  const entries = readdirSync(dir).filter((f) => f.endsWith('.js')).map((f) => path.join(dir, f));
  const entry = entries.find((f) => readFileSync(f, 'utf8').endsWith(suffix));
  t.ok(entry, 'protocol/versions.ts has an entry');
  const text = readFileSync(entry!, 'utf8');
  t.equal(text.length, source.length + suffix.length, 'types are blanked, not removed: positions (and stack traces) are the source\'s');
  t.notMatch(text, /export type Era/, 'the types are gone');
  t.equal(statSync(entry!).mode & 0o777, 0o600);

  writeFileSync(entry!, `import { parentPort } from 'node:worker_threads';\nexport const MODERN_VERSION = ${JSON.stringify(PLANTED)};\nparentPort?.postMessage(MODERN_VERSION);\n`);
  t.same(run(t, tmp), { dir, main: PLANTED, worker: PLANTED }, 'the main thread and a worker load the cached text');
});

t.test('a cache directory others may write to turns the caches off; nothing is written there', async (t) => {
  const tmp = tempHome(t);
  const dir = path.join(tmp, `albedo-compile-cache-${uid}`);
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  t.same(run(t, tmp), { dir: null, main: MODERN_VERSION, worker: null });
  t.same(readdirSync(dir), []);
});

t.test('a file where the directory should be, or NODE_DISABLE_COMPILE_CACHE: caches off, everything loads', async (t) => {
  const tmp = tempHome(t);
  writeFileSync(path.join(tmp, `albedo-compile-cache-${uid}`), 'not a directory');
  t.same(run(t, tmp), { dir: null, main: MODERN_VERSION, worker: null });
  const other = tempHome(t);
  t.same(run(t, other, { NODE_DISABLE_COMPILE_CACHE: '1' }), { dir: null, main: MODERN_VERSION, worker: null });
  t.same(readdirSync(other), [], 'no directory was made');
});
