// Not only $ALBEDO_HOME but every directory on the way to it must be safe
// from other users (issue 20, item 5): a home under a directory others may
// write (not sticky), or under another user's directory, is refused before
// anything in it is read (exit 1) — whoever can rename the home's entry can
// swap the home after the check. And the daemon holds the home it checked:
// a home renamed away and replaced by a link to another directory is not
// what the daemon reads from then on. (Tests run as root: "another user"
// is uid 65534, made with chown.)
import t from 'tap';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, spawnDaemon, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const NOBODY = 65534;
const root = process.getuid?.() === 0;

/** Starts a daemon that should refuse `home`; one that listens instead is stopped at once (the test then fails). */
async function refused(home: string): Promise<{ code: number | string; listened: boolean }> {
  const s = spawnDaemon(home, { tag: newTag() });
  let listened = false;
  const up = new Promise<void>((resolve) =>
    s.onLine((l) => {
      if (/listening on/.test(l)) {
        listened = true;
        resolve();
      }
    }),
  );
  await Promise.race([s.exited, up]);
  if (listened) s.child.kill('SIGTERM');
  return { code: await s.exited, listened };
}

const settings = (...names: string[]): string =>
  JSON.stringify({ mcp: { servers: Object.fromEntries(names.map((n) => [n, sdkServer()])) } }, null, 2);

t.test('a home under a directory others may write (not sticky) is refused; nothing in it is written', async (t) => {
  const base = tempHome(t);
  const shared = path.join(base, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  const home = path.join(shared, 'home');
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(path.join(home, 'extensions.json'), settings('planted'));
  const r = await refused(home);
  t.equal(r.code, 1);
  t.notOk(r.listened, 'it never listened');
  t.same(readdirSync(home), ['extensions.json'], 'no lock, no daemon.json');

  // Not there yet: not made there either.
  const r2 = await refused(path.join(shared, 'new-home'));
  t.equal(r2.code, 1);
  t.notOk(existsSync(path.join(shared, 'new-home')), 'the home was not made');
});

t.test("a home under another user's directory is refused", { skip: !root && 'needs root to chown' }, async (t) => {
  const base = tempHome(t);
  const theirs = path.join(base, 'theirs');
  mkdirSync(theirs, { mode: 0o755 });
  const home = path.join(theirs, 'home');
  mkdirSync(home, { mode: 0o700 });
  chownSync(theirs, NOBODY, NOBODY);
  const r = await refused(home);
  t.equal(r.code, 1);
  t.notOk(r.listened, 'it never listened');
  t.same(readdirSync(home), [], 'nothing was written');
});

t.test('a home swapped for a link after the start is not what the daemon reads: it keeps the directory it checked', async (t) => {
  const base = tempHome(t);
  const home = path.join(base, 'home');
  mkdirSync(home, { mode: 0o700 });
  writeFileSync(path.join(home, 'extensions.json'), settings('before'));
  const d = await startDaemon(t, home, { tag: newTag() });
  const names = async (): Promise<string[]> => {
    const r = await d.call('GET', '/v1/mcp/servers');
    return r.status === 200 ? r.body.servers.map((s: { name: string }) => s.name).sort() : [`${r.status} ${r.body?.error?.code}`];
  };
  t.same(await names(), ['before']);

  // The home renamed away, and a link to another directory with other settings put where it was.
  const moved = path.join(base, 'moved');
  renameSync(home, moved);
  const other = path.join(base, 'other');
  mkdirSync(other, { mode: 0o700 });
  writeFileSync(path.join(other, 'extensions.json'), settings('planted'));
  symlinkSync(other, home);
  // A hand edit in the directory the daemon checked: the daemon reads it again — from there.
  writeFileSync(path.join(moved, 'extensions.json'), settings('before', 'edited'));
  await until(async () => (await names()).join() !== 'before', 30_000, 'the edit');
  t.same(await names(), ['before', 'edited'], 'what it read is the directory it checked, not the link put in its place');
});
