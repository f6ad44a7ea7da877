// The settings service over extensions.toml (services/settings/toml-service.ts,
// issue 21, items 1 and 4): the same store and messages as the built-in one,
// through another codec. Reads, a save's transaction (put, merge patch,
// remove) written back as TOML with every other table kept, a hand edit
// picked up, and a broken file reported by line and column without quoting
// it. extensions.json is never touched.
import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'smol-toml';
import { Kernel } from '../../kernel/kernel.ts';
import type { SettingsChangedEvent } from '../../protocol/services/settings.ts';
import { rejection, tempHome, until } from '../helpers.ts';

const MODULE = fileURLToPath(new URL('../../services/settings/toml-service.ts', import.meta.url));

const START = `# Written by hand.
[mcp]
retryMs = 5000

[mcp.servers.docs]
command = "/bin/true"
env = { DOCS_TOKEN = { env = "MY_DOCS_TOKEN" } }

[other-extension]
theme = "dark"
`;

t.test('the TOML settings service reads, saves and watches extensions.toml', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.toml');
  writeFileSync(file, START);
  const k = new Kernel();
  k.start({ name: 'settings', module: MODULE, options: { home, env: { MY_DOCS_TOKEN: 'docs-secret' }, debounceMs: 50 } });
  t.teardown(() => k.stop(2_000));
  const changed: SettingsChangedEvent[] = [];
  const invalid: Array<{ issues: Array<{ message: string }> }> = [];
  k.on('settings', 'settings/changed', (e) => changed.push(e));
  k.on('settings', 'settings/invalid', (e) => invalid.push(e));

  const view = await k.call('settings', 'settings/get', {});
  t.match(view, { path: file, retryMs: 5000, invalid: null, servers: { docs: { type: 'stdio', command: '/bin/true' } } });
  const docs = await k.call('settings', 'settings/resolve', { name: 'docs' });
  t.same(docs.server.type === 'stdio' && docs.server.env, { DOCS_TOKEN: 'docs-secret' }, 'a named secret resolved');

  const put = await k.call('settings', 'settings/apply', {
    plan: { op: 'put', name: 'web', entry: { url: 'https://web.example/mcp', enabled: false }, secrets: { bearerToken: 'typed-1' } },
  });
  t.match(put, { saved: true, before: null, change: { name: 'web', change: 'added' } });
  t.same(put.server?.server.secrets, { bearerToken: true, header: null, env: [], oauthClient: false });
  const patched = await k.call('settings', 'settings/apply', { plan: { op: 'patch', name: 'docs', patch: { args: ['--v'], env: null } } });
  t.match(patched.change, { name: 'docs', change: 'updated' });
  const doc = parse(readFileSync(file, 'utf8'));
  t.same(
    doc,
    {
      mcp: {
        retryMs: 5000,
        servers: { docs: { command: '/bin/true', args: ['--v'] }, web: { url: 'https://web.example/mcp', enabled: false } },
      },
      'other-extension': { theme: 'dark' },
    },
    'written back as TOML: the entries as written (defaults left out), the other table kept',
  );
  t.notOk(readFileSync(file, 'utf8').includes('typed-1'), 'the typed secret is in creds.json, not the file');
  t.ok(readFileSync(path.join(home, 'creds.json'), 'utf8').includes('typed-1'));

  const removed = await k.call('settings', 'settings/apply', { plan: { op: 'remove', name: 'web' } });
  t.same(removed.change, { name: 'web', change: 'removed', enabled: false, fingerprint: null });
  const gone = await rejection(k.call('settings', 'settings/apply', { plan: { op: 'enable', name: 'web' } }));
  t.match(gone, { code: 'ALBEDO_NOT_FOUND', data: { server: 'web' } });

  // A hand edit, picked up by the watcher; then a broken one, reported by where it is, never quoting the file.
  writeFileSync(file, `${readFileSync(file, 'utf8')}\n[mcp.servers.more]\ncommand = "/bin/false"\n`);
  await until(() => changed.some((c) => c.cause === 'file' && c.servers.some((s) => s.name === 'more')), 10_000, 'the hand edit');
  writeFileSync(file, '[mcp.servers.x]\ncommand = "hunter2-secret\n');
  await until(() => invalid.length > 0, 10_000, 'settings/invalid');
  t.match(invalid[0]!.issues, [{ message: /^not valid TOML \(line 2, column \d+\)$/ }]);
  t.notOk(JSON.stringify(invalid).includes('hunter2'), 'nothing of the file is quoted');
  const refused = await rejection(k.call('settings', 'settings/apply', { plan: { op: 'put', name: 'y', entry: { command: 'y' } } }));
  t.match(refused, { code: 'ALBEDO_INVALID_CONFIG', data: { broken: true } }, 'no save over a broken file');
  t.notOk(existsSync(path.join(home, 'extensions.json')), 'extensions.json was never written');
});

t.test("a save keeps other tables' dates and times as TOML has them (a local date stays a date, not an instant)", async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.toml');
  const other = '[other-extension]\nsince = 1979-05-27\nat = 07:32:00\nlocal = 1979-05-27T07:32:00\nzoned = 1979-05-27T07:32:00Z\n';
  writeFileSync(file, `[enabled]\nreviewed = 2024-01-02\n\n${other}`);
  const k = new Kernel();
  k.start({ name: 'settings', module: MODULE, options: { home, env: {}, watch: false } });
  t.teardown(() => k.stop(2_000));
  // As TOML spells each value (smol-toml's dates say it by toISOString): a local date, a local time, a local or an offset date-time.
  const dates = (): Record<string, string> => {
    const doc = parse(readFileSync(file, 'utf8')) as Record<string, Record<string, Date>>;
    const other = Object.entries(doc['other-extension']!).map(([k, v]) => [k, v.toISOString()]);
    return { reviewed: doc.enabled!.reviewed!.toISOString(), ...Object.fromEntries(other) };
  };
  const want = {
    reviewed: '2024-01-02',
    since: '1979-05-27',
    at: '07:32:00.000',
    local: '1979-05-27T07:32:00.000',
    zoned: '1979-05-27T07:32:00.000Z',
  };

  await k.call('settings', 'settings/apply', { plan: { op: 'put', name: 'a', entry: { command: '/bin/true', enabled: false } } });
  t.same(dates(), want, 'a server written: the other tables as they were');
  await k.call('settings', 'settings/apply', { plan: { op: 'sections', patch: { retryMs: 1_234 } } });
  t.same(dates(), want, 'the sections written: the extension defaults and the other tables as they were');
  await k.call('settings', 'settings/apply', { plan: { op: 'remove', name: 'a' } });
  t.same(dates(), want, 'a server removed: likewise');
});

t.test("each format keeps a journal of its own: a TOML store leaves extensions.json's journal alone", async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'extensions.toml'), START);
  // A JSON store's journal of a half-done write, by a writer that is gone: only a JSON store may complete or undo it.
  const journal = JSON.stringify({ pid: 2 ** 22 + 17, start: null, server: 'docs', before: null, after: 'x', creds: { removed: true } });
  const jsonJournal = path.join(home, '.settings-write.json');
  writeFileSync(jsonJournal, journal);
  const k = new Kernel();
  k.start({ name: 'settings', module: MODULE, options: { home, env: {}, watch: false } });
  t.teardown(() => k.stop(2_000));
  await k.call('settings', 'settings/apply', {
    plan: { op: 'put', name: 'web', entry: { url: 'https://web.example/mcp', enabled: false } },
  });
  t.equal(readFileSync(jsonJournal, 'utf8'), journal, 'the JSON journal is untouched');
  t.notOk(existsSync(path.join(home, '.extensions.toml-write.json')), "the TOML store's own journal is gone once its write is done");
});
