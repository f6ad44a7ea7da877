// The compile caches' directory is checked all the way down (issue 20,
// item 5): an `albedo/` another user made under the cache directory, or a
// $XDG_CACHE_HOME in a place others may write, turns the caches off
// (nothing is written there); and an entry's seal covers its file name, so
// an entry moved to another entry's name is stripped again, never run.
// Each case runs in a process of its own with XDG_CACHE_HOME pointing at a
// fresh directory. (Tests run as root: "another user" is uid 65534.)
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { NODE, ROOT, tempHome } from '../helpers.ts';

const CACHE = pathToFileURL(path.join(ROOT, 'kernel', 'compile-cache.ts')).href;
const NOBODY = 65534;
const root = process.getuid?.() === 0;

/** Turns the caches on for the .ts files under `src`, imports each of `files` there, and says what each exports as `WHO`. */
function run(t: { teardown(fn: () => unknown): void }, xdg: string, src: string, files: string[]): { dir: string | null; who: string[] } {
  const driver = path.join(tempHome(t), 'driver.mjs');
  writeFileSync(
    driver,
    `
    const { enableCompileCaches } = await import(${JSON.stringify(CACHE)});
    const dir = enableCompileCaches({ root: ${JSON.stringify(pathToFileURL(src).href + '/')} });
    const who = [];
    for (const f of ${JSON.stringify(files)}) who.push((await import(${JSON.stringify(pathToFileURL(src).href + '/')} + f)).WHO);
    console.log(JSON.stringify({ dir, who }));
  `,
  );
  // NODE_OPTIONS cleared: a test runner's --enable-source-maps there would keep Node's own stripping.
  const r = spawnSync(NODE, [driver], {
    env: { ...process.env, NODE_OPTIONS: '', XDG_CACHE_HOME: xdg },
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`the driver failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

/** Two project-like modules, a.ts and b.ts, each exporting WHO with a type to strip. */
function sources(t: { teardown(fn: () => unknown): void }): string {
  const src = tempHome(t);
  writeFileSync(path.join(src, 'a.ts'), "type Who = string;\nexport const WHO: Who = 'a';\n");
  writeFileSync(path.join(src, 'b.ts'), "type Who = string;\nexport const WHO: Who = 'b';\n");
  return src;
}

t.test("an entry moved to another entry's name is not run", async (t) => {
  const xdg = tempHome(t);
  const src = sources(t);
  const dir = path.join(xdg, 'albedo', 'compile');
  t.same(run(t, xdg, src, ['a.ts', 'b.ts']), { dir, who: ['a', 'b'] });
  const entries = readdirSync(dir).filter((f) => f.endsWith('.js'));
  const of = (who: string): string => entries.find((f) => new RegExp(`WHO\\s*= '${who}'`).test(readFileSync(path.join(dir, f), 'utf8')))!;
  const a = of('a');
  const b = of('b');
  t.ok(a && b && a !== b, 'each module has its entry');
  // The entry of a.ts, whole and sealed, put where b.ts's entry is looked for.
  renameSync(path.join(dir, a), path.join(dir, b));
  t.same(run(t, xdg, src, ['b.ts']).who, ['b'], 'b.ts loads its own code, not the moved entry');
});

t.test(
  'an albedo/ directory another user made turns the caches off; nothing is written under it',
  { skip: !root && 'needs root to chown' },
  async (t) => {
    const xdg = tempHome(t);
    const src = sources(t);
    const theirs = path.join(xdg, 'albedo');
    mkdirSync(theirs, { mode: 0o755 });
    chownSync(theirs, NOBODY, NOBODY);
    t.same(run(t, xdg, src, ['a.ts']), { dir: null, who: ['a'] }, 'the caches are off, the module loads');
    t.same(readdirSync(theirs), [], 'no compile/ directory was made in it');
  },
);

t.test('a cache directory in a place others may write (not sticky) turns the caches off', async (t) => {
  const base = tempHome(t);
  const src = sources(t);
  const xdg = path.join(base, 'shared-cache');
  mkdirSync(xdg);
  chmodSync(xdg, 0o777);
  t.same(run(t, xdg, src, ['a.ts']), { dir: null, who: ['a'] });
  t.notOk(existsSync(path.join(xdg, 'albedo')), 'nothing was made there');
});

t.test('the directories it makes are mode 0700', async (t) => {
  const top = tempHome(t);
  const xdg = path.join(top, 'not', 'yet');
  const src = sources(t);
  const dir = path.join(xdg, 'albedo', 'compile');
  t.equal(run(t, xdg, src, ['a.ts']).dir, dir);
  for (const d of [path.dirname(xdg), xdg, path.dirname(dir), dir]) t.equal(statSync(d).mode & 0o777, 0o700, path.relative(top, d));
});
