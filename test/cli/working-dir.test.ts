// A stdio server's working directory keeps away from $ALBEDO_HOME (issue 20,
// item 4), through the real CLI and daemon with the reference filesystem
// server given "." — the idiom that handed it the home, daemon.json (the
// API's token) and creds.json. Saved without a cwd, it runs in an empty
// directory of its own, which is neither the home nor in it nor above it,
// and it cannot read daemon.json. A configured cwd or an argument in or
// above the home is kept, with a warning: in the saved server
// (`warnings`), on the CLI's stderr, and in a session over it.
import t, { type Test } from 'tap';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NODE, ROOT, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

const FS = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const TAG_ENV = { ALBEDO_TEST_TAG: { env: 'TEST_SERVER_TAG' } };
const TAGGED = ['--env', 'ALBEDO_TEST_TAG=${TEST_SERVER_TAG}'];

/** Whether `p` is `dir` or lies in it. */
const within = (p: string, dir: string): boolean => {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

function otherDir(t: Parameters<typeof tempHome>[0]): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-elsewhere-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The one directory the filesystem server `fs` says it serves (asked through `albedo call`). */
async function allowedDir(t: Test, e: CliEnv): Promise<string> {
  const allowed = await piped(e, ['call', 'fs/list_allowed_directories', '--json']);
  t.equal(allowed.code, 0, allowed.stderr);
  const text: string = JSON.parse(allowed.stdout)
    .content.map((c: { text?: string }) => c.text ?? '')
    .join('\n');
  const dirs = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => path.isAbsolute(l));
  t.equal(dirs.length, 1, 'one allowed directory');
  return dirs[0]!;
}

t.test('a server saved without a cwd runs in an empty directory of its own: "." does not reach the home', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  // By hand, as extensions.json allows: no cwd.
  writeFileSync(
    path.join(e.home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { fs: { command: NODE, args: [FS, '.'], env: TAG_ENV } } } }),
  );
  const d = await startDaemon(t, e.home, { tag: e.tag });

  const dir = await allowedDir(t, e);
  const real = path.resolve(e.home);
  t.notOk(within(dir, real), 'not the home, nor in it');
  t.notOk(within(real, dir), 'nor a directory above it');
  t.same(readdirSync(dir), [], 'an empty directory');
  t.equal(statSync(dir).mode & 0o077, 0, "this user's alone");

  for (const p of ['daemon.json', path.join(e.home, 'daemon.json'), path.join(e.home, 'creds.json')]) {
    const read = await piped(e, ['call', 'fs/read_text_file', '--args', JSON.stringify({ path: p }), '--json']);
    t.not(read.code, 0, `${p} cannot be read`);
    t.notOk(read.stdout.includes(d.info.token) || read.stderr.includes(d.info.token), 'the token is not handed out');
  }

  const shown = await piped(e, ['mcp', 'show', 'fs', '--json']);
  t.equal(shown.code, 0);
  t.same(JSON.parse(shown.stdout).warnings, [], 'nothing to warn about');
});

t.test('a cwd or an argument in or above the home is kept, with a warning', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const d = await startDaemon(t, e.home, { tag: e.tag });
  const elsewhere = otherDir(t);
  const add = (name: string, cwd: string, args: string[]) =>
    piped(e, ['mcp', 'add', name, ...TAGGED, '--cwd', cwd, '--json', '--', NODE, FS, ...args]);
  const paths = (r: { stdout: string }): string[] => JSON.parse(r.stdout).server.warnings.map((w: { path: unknown[] }) => w.path.join('.'));

  const inside = await add('inside', e.home, ['.']);
  t.equal(inside.code, 0, `saved all the same: ${inside.stderr}`);
  t.same(paths(inside), ['cwd'], 'the cwd is the home');

  const above = await add('above', path.dirname(e.home), ['.']);
  t.equal(above.code, 0, above.stderr);
  t.same(paths(above), ['cwd', 'args.1'], 'the cwd holds the home, and so does "."');

  const named = await add('named', elsewhere, [e.home]);
  t.equal(named.code, 0, named.stderr);
  t.same(paths(named), ['args.1'], 'an absolute argument naming the home');

  const up = await add('up', elsewhere, [path.relative(elsewhere, path.join(e.home, 'store'))]);
  t.equal(up.code, 0, up.stderr);
  t.same(paths(up), ['args.1'], 'a relative argument climbing into the home');

  const clean = await add('clean', elsewhere, ['.']);
  t.equal(clean.code, 0, clean.stderr);
  t.same(paths(clean), [], 'a directory elsewhere: no warning');

  // For a person: the save, then each warning on stderr.
  const human = await piped(e, ['mcp', 'add', 'human', ...TAGGED, '--cwd', e.home, '--', NODE, FS, '.']);
  t.equal(human.code, 0);
  t.not(human.stderr.trim(), '', 'said on stderr');
  const quiet = await piped(e, ['mcp', 'add', 'quiet', ...TAGGED, '--cwd', elsewhere, '--', NODE, FS, '.']);
  t.equal(quiet.code, 0);
  t.equal(quiet.stderr.trim(), '', 'nothing said for a clean one');

  // A session over the server says it too.
  for (const [name, warned] of [
    ['inside', true],
    ['clean', false],
  ] as const) {
    const s = await d.call('POST', '/v1/sessions', { body: { servers: { include: [name] } } });
    t.equal(s.status, 201, s.text);
    const got = await d.call('GET', `/v1/sessions/${s.body.id}`);
    t.equal(got.body.warnings.length > 0, warned, `${name}: the session ${warned ? 'warns' : 'does not warn'}`);
    await d.call('DELETE', `/v1/sessions/${s.body.id}`);
  }
  t.notOk(readFileSync(path.join(e.home, 'extensions.json'), 'utf8').includes('warning'), 'a warning is said, not saved');
});

t.test('albedo probe warns too: its working directory or "." in the home', async (t) => {
  const home = tempHome(t);
  const probe = (cwd: string) => piped({ home, tag: newTag(), cwd }, ['probe', '--json', '--', NODE, FS, '.']);
  const inHome = await probe(home);
  t.equal(inHome.code, 0, inHome.stderr);
  t.not(inHome.stderr.trim(), '', 'warned on stderr');
  t.equal(JSON.parse(inHome.stdout).serverInfo.name !== undefined, true, 'and probed all the same');
  const clean = await probe(otherDir(t));
  t.equal(clean.code, 0, clean.stderr);
  t.equal(clean.stderr.trim(), '', 'nothing to say elsewhere');
});

t.test('another user who plants <tmp>/albedo-<uid> does not stop a server without a cwd: the next candidate is used', async (t) => {
  const uid = process.getuid!();
  // A temporary directory of the test's own, sticky and open to all like /tmp, with albedo-<uid> planted by uid 65534.
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'albedo-tmpdir-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  chmodSync(tmp, 0o1777);
  const planted = path.join(tmp, `albedo-${uid}`);
  mkdirSync(planted, { mode: 0o755 });
  chownSync(planted, 65534, 65534);
  const cache = otherDir(t);
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  writeFileSync(
    path.join(e.home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { fs: { command: NODE, args: [FS, '.'], env: TAG_ENV } } } }),
  );
  await startDaemon(t, e.home, { tag: e.tag, env: { TMPDIR: tmp, XDG_RUNTIME_DIR: '', XDG_CACHE_HOME: cache } });

  const dir = await allowedDir(t, e);
  t.ok(within(dir, path.join(cache, 'albedo', 'cwd')), "under the user's cache directory");
  t.notOk(within(dir, planted), 'not in the planted directory');
  t.same(readdirSync(planted), [], 'nothing made in the planted directory');
  t.equal(statSync(dir).uid, uid, "this user's");
  t.equal(statSync(dir).mode & 0o077, 0, "this user's alone");
  t.same(readdirSync(dir), [], 'a directory of its own');
});

t.test('$XDG_RUNTIME_DIR, when set, comes first', async (t) => {
  const runtime = otherDir(t);
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  writeFileSync(
    path.join(e.home, 'extensions.json'),
    JSON.stringify({ mcp: { servers: { fs: { command: NODE, args: [FS, '.'], env: TAG_ENV } } } }),
  );
  await startDaemon(t, e.home, { tag: e.tag, env: { XDG_RUNTIME_DIR: runtime } });
  const allowed = await piped(e, ['call', 'fs/list_allowed_directories', '--json']);
  t.equal(allowed.code, 0, allowed.stderr);
  const text: string = JSON.parse(allowed.stdout)
    .content.map((c: { text?: string }) => c.text ?? '')
    .join('\n');
  const dirs = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => path.isAbsolute(l));
  t.equal(dirs.length, 1);
  t.ok(within(dirs[0]!, path.join(runtime, 'albedo', 'cwd')), 'under $XDG_RUNTIME_DIR/albedo/cwd');
});
