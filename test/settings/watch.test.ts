// Hand edits while running (issue 15, item 1): an edit to extensions.json —
// saved in place or by an editor's write-then-rename — is picked up and
// published (`settings/changed`, which servers, their new fingerprints); a
// broken edit keeps the previous settings and publishes `settings/invalid`
// with the issues; a sign-in written to creds.json moves that server's
// fingerprint and is published too. Waits are on the events, bounded.
import t from 'tap';
import { renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SettingsStore } from '../../services/settings/store.ts';
import { FileCredsStore } from '../../services/oauth/store.ts';
import type { SettingsEvents } from '../../protocol/services/settings.ts';
import { tempHome, until } from '../helpers.ts';

type Ev = { [E in keyof SettingsEvents]: [E, SettingsEvents[E]] }[keyof SettingsEvents];

type Next = <E extends Ev[0]>(name: E) => Promise<Extract<Ev, [E, unknown]>[1]>;

/** A watching store, and `next(name)`: the next event of that name after the last one taken (bounded wait). */
async function watched(t: { teardown(fn: () => unknown): void }, home: string): Promise<{ s: SettingsStore; events: Ev[]; next: Next }> {
  const events: Ev[] = [];
  const s = await new SettingsStore({ home, env: { PATH: '/usr/bin' }, debounceMs: 50, onEvent: (n, p) => events.push([n, p] as Ev) }).open(
    true,
  );
  t.teardown(() => s.close());
  let seen = events.length;
  const next = async <E extends Ev[0]>(name: E): Promise<Extract<Ev, [E, unknown]>[1]> => {
    let hit: Ev | undefined;
    await until(
      () => {
        const i = events.findIndex((e, j) => j >= seen && e[0] === name);
        if (i >= 0) {
          hit = events[i];
          seen = i + 1;
        }
        return hit !== undefined;
      },
      15_000,
      name,
    );
    return hit![1] as Extract<Ev, [E, unknown]>[1];
  };
  return { s, events, next };
}

const doc = (servers: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ mcp: { servers }, ...extra }, null, 2);

t.test('edits by hand are picked up: saved in place and by rename', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, doc({ a: { command: '/bin/a' }, b: { url: 'https://b.example/mcp' } }));
  const { s, next } = await watched(t, home);
  const fpA = s.resolve('a').fingerprint;
  const fpB = s.resolve('b').fingerprint;

  writeFileSync(file, doc({ a: { command: '/bin/a', args: ['--new'] }, b: { url: 'https://b.example/mcp' } }));
  const c1 = await next('settings/changed');
  t.equal(c1.cause, 'file');
  t.equal(c1.servers.length, 1, 'only the server that changed');
  t.match(c1.servers[0], { name: 'a', change: 'updated', enabled: true });
  t.not(c1.servers[0]!.fingerprint, fpA, 'with its new fingerprint');
  t.equal(c1.servers[0]!.fingerprint, s.resolve('a').fingerprint);

  // An editor's save: a new file renamed over the old one.
  const tmp = path.join(home, '.extensions.json.swp');
  writeFileSync(tmp, doc({ b: { url: 'https://b.example/mcp', enabled: false }, c: { command: '/bin/c' } }, { other: 1 }));
  renameSync(tmp, file);
  const c2 = await next('settings/changed');
  const by = Object.fromEntries(c2.servers.map((x) => [x.name, x]));
  t.match(by, {
    a: { change: 'removed', fingerprint: null },
    b: { change: 'updated', enabled: false, fingerprint: fpB },
    c: { change: 'added' },
  });
  t.same(Object.keys(s.get().servers), ['b', 'c']);
  t.same(
    s.resolveAll().servers.map((x) => x.name),
    ['c'],
    'a disabled server is not prepared',
  );
});

t.test('a broken edit keeps the previous settings and says what is wrong; fixing it resumes', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, doc({ a: { command: '/bin/a' } }));
  const { s, next } = await watched(t, home);
  const before = s.get();
  const fp = s.resolve('a').fingerprint;

  writeFileSync(file, doc({ a: { command: '' }, b: { url: 'not a url' } }));
  const bad = await next('settings/invalid');
  t.equal(bad.path, file);
  t.same(bad.issues.map((i) => [i.server, i.path]).sort(), [
    ['a', ['command']],
    ['b', ['url']],
  ]);
  const during = s.get();
  t.same(during.servers, before.servers, 'the previous settings stay in force');
  t.equal(during.generation, before.generation);
  t.same(during.invalid, bad.issues, 'get() says the file on disk is broken');
  t.equal(s.resolve('a').fingerprint, fp, 'and resolves as before');
  t.same(s.resolveAll().invalid, bad.issues, 'preparation is told too');

  writeFileSync(file, '{ "mcp": { "servers": ');
  const worse = await next('settings/invalid');
  t.same(
    worse.issues.map((i) => i.server),
    [null],
    'not JSON',
  );
  t.same(s.get().servers, before.servers);

  writeFileSync(file, doc({ a: { command: '/bin/a' }, z: { command: '/bin/z' } }, { enabled: { 'editor-mcp': false } }));
  const good = await next('settings/changed');
  t.same(
    good.servers.map((x) => [x.name, x.change]),
    [['z', 'added']],
    'only z is new',
  );
  t.same(good.enabled, { mcp: true, 'editor-mcp': false });
  t.equal(s.get().invalid, null);
});

t.test("a sign-in written to creds.json moves that server's fingerprint, and is published", async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'extensions.json'), doc({ o: { url: 'https://o.example/mcp' }, p: { command: '/bin/p' } }));
  const { s, next } = await watched(t, home);
  const before = s.resolve('o').fingerprint;
  await new FileCredsStore(path.join(home, 'creds.json')).update('o', 'https://o.example/mcp', () => ({
    record: {
      url: 'https://o.example/mcp',
      state: 'signed_in',
      account: 'alice',
      updatedAt: 0,
      tokens: { accessToken: 'a', tokenType: 'Bearer', issuer: 'https://as.example', obtainedAt: 1 },
    },
    value: undefined,
  }));
  const c = await next('settings/changed');
  t.equal(c.cause, 'credentials');
  t.same(
    c.servers.map((x) => x.name),
    ['o'],
    'only the server signed in to',
  );
  t.not(c.servers[0]!.fingerprint, before);
  t.equal(c.servers[0]!.fingerprint, s.resolve('o').fingerprint);
});

t.test('a missing variable shows in the change as a problem, not a fingerprint', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, doc({}));
  const { next } = await watched(t, home);
  writeFileSync(file, doc({ n: { command: '/bin/n', env: { T: { env: 'SURELY_UNSET_VARIABLE' } } } }));
  const c = await next('settings/changed');
  t.match(c.servers, [
    { name: 'n', change: 'added', fingerprint: null, problem: { server: 'n', path: ['env', 'T'], reason: 'missing_env' } },
  ]);
});
