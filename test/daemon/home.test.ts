// $ALBEDO_HOME must be the user's own (issue 11's hardening review): a home
// that others may write, or a symbolic link to one, is refused before
// anything in it is read or run (exit 1, one line on stderr) — someone who
// can plant extensions.json there chooses the commands the daemon runs. And
// the lock is written create-exclusive: a file planted where its temporary
// file goes is not written through.
import t from 'tap';
import { chmodSync, chownSync, existsSync, lstatSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { acquireHomeLock, LOCK_FILE, readLock } from '../../daemon/lock.ts';
import { NODE, fixture, newTag, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { entry, spawnDaemon, startDaemon } from './harness.ts';

t.setTimeout(170_000);

/** Starts a daemon that should refuse `home`; one that listens instead is stopped at once (the test then fails). */
async function refused(home: string, tag: string): Promise<{ code: number | string; lines: string[]; listened: boolean }> {
  const s = spawnDaemon(home, { tag });
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
  return { code: await s.exited, lines: s.lines, listened };
}

/** What a refused start must leave as it was: the home's names and its small files' bytes. */
function snapshot(home: string): string {
  return JSON.stringify(
    readdirSync(home)
      .sort()
      .map((f) => {
        const p = path.join(home, f);
        return [f, lstatSync(p).isFile() ? readFileSync(p, 'base64') : 'dir'];
      }),
  );
}

t.test('a home others can write, or a symbolic link, is refused before anything in it is read or run', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const aside = tempHome(t);
  const marker = path.join(aside, 'ran.txt');
  // A server that says each time it is run, then serves as the SDK fixture does.
  const wrapper = path.join(aside, 'marking-server.mjs');
  writeFileSync(
    wrapper,
    ["import { appendFileSync } from 'node:fs';", "appendFileSync(process.argv[2], 'ran\\n');", 'await import(process.argv[3]);'].join(
      '\n',
    ),
  );
  const planted = { mcp: { servers: { m: entry(NODE, [wrapper, marker, pathToFileURL(fixture('sdk-server.ts')).href]) } } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify(planted, null, 2));

  // A session left open by a killed daemon: the next daemon for this home restores it and dials `m` again.
  const first = await startDaemon(t, home, { tag });
  t.equal((await first.call('POST', '/v1/sessions', { body: {} })).status, 201);
  t.ok(existsSync(marker), 'opening the session ran the planted server');
  t.equal(await first.stop('SIGKILL'), 'SIGKILL');
  t.same(await waitNoLeftovers(tag, 15_000), [], 'its server reaped');
  rmSync(marker);
  const kept = snapshot(home);

  const link = path.join(aside, 'home-link');
  symlinkSync(home, link);
  const cases: Array<[string, string, () => void]> = [
    ["a symbolic link to a directory of the user's own", link, () => {}],
    ['mode 0777', home, () => chmodSync(home, 0o777)],
    ['mode 0770 (the group may write)', home, () => chmodSync(home, 0o770)],
  ];
  if (process.getuid?.() === 0)
    cases.push([
      'a directory of another user',
      home,
      () => {
        chmodSync(home, 0o700);
        chownSync(home, 1, 1);
      },
    ]);
  for (const [what, dir, arrange] of cases) {
    arrange();
    const r = await refused(dir, tag);
    t.equal(r.code, 1, `${what}: exit 1`);
    t.notOk(r.listened, `${what}: it never listened`);
    t.equal(r.lines.length, 1, `${what}: one line on stderr: ${r.lines.join(' | ')}`);
    t.match(r.lines[0], /cannot start/);
    t.notOk(existsSync(marker), `${what}: the planted server was not run`);
    t.equal(snapshot(home), kept, `${what}: nothing in the home was written (no lock taken, no daemon.json)`);
  }
  if (process.getuid?.() === 0) chownSync(home, 0, 0);
  chmodSync(home, 0o700);

  // The control: the same home, the user's own again, is taken and its session restored, which runs the planted server.
  const again = await startDaemon(t, home, { tag });
  await until(() => existsSync(marker), 60_000, 'the restored session dialling the planted server');
  t.not(readLock(home)?.pid, first.info.pid, 'the home is taken by the new daemon');
  t.equal(await again.stop(), 0);
});

t.test('the lock is written create-exclusive: a link planted at a temporary name is not written through', async (t) => {
  const home = tempHome(t);
  const aside = tempHome(t);
  const victim = path.join(aside, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, path.join(home, `${LOCK_FILE}.${process.pid}.tmp`));
  const lock = await acquireHomeLock(home);
  t.ok(lock.held, 'taken');
  t.equal(readFileSync(victim, 'utf8'), 'precious\n', "the link's target is untouched");
  t.ok(lstatSync(path.join(home, LOCK_FILE)).isFile(), 'daemon.lock is a file, not the planted link');
  t.equal(lstatSync(path.join(home, LOCK_FILE)).mode & 0o777, 0o600, 'mode 0600');
  t.equal(readLock(home)?.pid, process.pid);
  // The temporary file has a fresh random name (platform/atomic-file.ts): the planted link is left alone, and none of ours stays.
  t.same(
    readdirSync(home).filter((f) => f.endsWith('.tmp')),
    [`${LOCK_FILE}.${process.pid}.tmp`],
    'no temporary file of ours left',
  );
  if (lock.held) await lock.release();
  t.notOk(existsSync(path.join(home, LOCK_FILE)), 'released');
});
