// The settings service in its worker (issue 15, item 1), started by the
// kernel as the transport is: every method through kernel.call, the events
// through kernel.on, errors keeping their code and data across the thread.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kernel } from '../../kernel/kernel.ts';
import type { SettingsChangedEvent } from '../../protocol/services/settings.ts';
import { rejection, tempHome, until } from '../helpers.ts';
import { SEED_EXAMPLE } from '../fixtures/settings-examples.ts';

const MODULE = fileURLToPath(new URL('../../services/settings/service.ts', import.meta.url));

async function start(t: { teardown(fn: () => unknown): void }, home: string, env: Record<string, string>): Promise<Kernel> {
  const k = new Kernel();
  k.start({ name: 'settings', module: MODULE, options: { home, env, debounceMs: 50 } });
  t.teardown(() => k.stop(2_000));
  return k;
}

t.test('the service answers get, resolve, resolve-all and apply (a try asked of `save`), and publishes changes', async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify(SEED_EXAMPLE));
  const k = await start(t, home, { PATH: '/usr/bin', MY_DOCS_TOKEN: 'docs-secret', MY_SEARCH_TOKEN: 'search-secret' });
  // The saving caller's service on the kernel's thread: it is asked to try the draft, as the daemon is.
  const tries: Array<{ id: string; name: string; server: unknown }> = [];
  k.provide('save', {
    'save/check': () => ({}),
    'save/try': (p) => {
      tries.push(p);
      return { result: 'connected' as const };
    },
  });
  const changed: SettingsChangedEvent[] = [];
  const invalid: unknown[] = [];
  k.on('settings', 'settings/changed', (e) => changed.push(e));
  k.on('settings', 'settings/invalid', (e) => invalid.push(e));

  const view = await k.call('settings', 'settings/get', {});
  t.same(Object.keys(view.servers), ['docs', 'search']);
  t.match(view, { path: path.join(home, 'extensions.json'), retryMs: 30000, enabled: { mcp: true, 'editor-mcp': true }, invalid: null });
  t.same(view.servers.search!.secrets, { bearerToken: false, header: null, env: [], oauthClient: false });

  // The example's docs server names cwd /srv/docs, which does not exist here: a specific error, across the thread.
  const e = await rejection(k.call('settings', 'settings/resolve', { name: 'docs' }));
  t.equal(e.code, 'ALBEDO_INVALID_CONFIG');
  t.same(e.data, { server: 'docs', path: ['cwd'], reason: 'missing_cwd' });
  const all = await rejection(k.call('settings', 'settings/resolve-all', {}));
  t.match(all.data, { issues: [{ server: 'docs', reason: 'missing_cwd' }] });
  t.equal((await rejection(k.call('settings', 'settings/resolve', { name: 'nope' }))).code, 'ALBEDO_NOT_FOUND');

  const search = await k.call('settings', 'settings/resolve', { name: 'search' });
  t.match(search, {
    name: 'search',
    enabled: true,
    enabledTools: ['search'],
    server: { type: 'http', url: 'https://mcp.example.com/mcp', callTimeoutMs: 30000 },
  });
  t.same(search.server.type === 'http' && search.server.headers, { Authorization: 'Bearer search-secret' });

  const dry = await k.call('settings', 'settings/apply', {
    plan: { op: 'put', name: 'docs', entry: { command: '/opt/draft-docs', cwd: home }, secrets: { env: { X: 'typed' } } },
    save: { id: 'dry-1', try: true },
    dryRun: true,
  });
  t.match(dry, { saved: false, tried: 'connected', change: null });
  t.match(tries, [{ id: 'dry-1', name: 'docs', server: { type: 'stdio', command: '/opt/draft-docs', env: { X: 'typed' } } }]);
  t.notOk(readFileSync(path.join(home, 'extensions.json'), 'utf8').includes('/opt/draft-docs'), 'a dry run writes nothing');

  const applied = await k.call('settings', 'settings/apply', {
    plan: {
      op: 'put',
      name: 'docs',
      entry: { command: '/opt/draft-docs', cwd: home, env: { T: { env: 'MY_DOCS_TOKEN' } } },
      secrets: { env: { X: 'typed' } },
    },
  });
  t.equal(tries.length, 1, 'no `save`: no try');
  const put = applied.change!;
  t.match(put, { name: 'docs', change: 'updated', fingerprint: /^[0-9a-f]{64}$/ });
  t.match(applied.server, { server: { command: '/opt/draft-docs', secrets: { env: ['X'] } }, resolution: { ok: true } });
  await until(
    () => changed.some((c) => c.cause === 'write' && c.servers.some((s) => s.name === 'docs')),
    10_000,
    'settings/changed after the write',
  );
  const ready = await k.call('settings', 'settings/resolve-all', { exclude: ['search'] });
  t.same(
    ready.servers.map((s) => s.name),
    ['docs'],
  );
  t.equal(ready.servers[0]!.fingerprint, put.fingerprint);
  t.same((await k.call('settings', 'settings/get', {})).servers.docs!.secrets.env, ['X']);

  const bad = await rejection(k.call('settings', 'settings/apply', { plan: { op: 'put', name: 'x', entry: { url: 'ftp://x' } } }));
  t.match(bad, { code: 'ALBEDO_INVALID_CONFIG', data: { issues: [{ server: 'x', path: ['url'] }], entry: true } });

  // A hand edit, then a broken one.
  const file = path.join(home, 'extensions.json');
  const cur = JSON.parse(readFileSync(file, 'utf8'));
  cur.mcp.servers.search.enabled = false;
  writeFileSync(file, JSON.stringify(cur));
  await until(
    () => changed.some((c) => c.cause === 'file' && c.servers.some((s) => s.name === 'search' && !s.enabled)),
    10_000,
    'the hand edit',
  );
  writeFileSync(file, '{ nope');
  await until(() => invalid.length === 1, 10_000, 'settings/invalid');
  t.same(
    (await k.call('settings', 'settings/resolve-all', {})).servers.map((s) => s.name),
    ['docs'],
    'the last valid settings stay in force',
  );
  t.ok((await k.call('settings', 'settings/get', {})).invalid, 'get reports the broken file');
  writeFileSync(file, JSON.stringify(cur));
  await until(async () => (await k.call('settings', 'settings/get', {})).invalid === null, 10_000, 'the fix');

  const removed = await k.call('settings', 'settings/apply', { plan: { op: 'remove', name: 'docs' } });
  t.same(removed.change, { name: 'docs', change: 'removed', enabled: false, fingerprint: null });
  t.same(Object.keys((await k.call('settings', 'settings/get', {})).servers), ['search']);
});

t.test('a file broken from the start: get reports it, preparation refuses, a fix is picked up', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, JSON.stringify({ mcp: { servers: { a: { command: 'x', env: { T: 'inlined' } } } } }));
  const k = await start(t, home, {});
  const changed: SettingsChangedEvent[] = [];
  k.on('settings', 'settings/changed', (e) => changed.push(e));
  const view = await k.call('settings', 'settings/get', {});
  t.match(view.invalid, [{ server: 'a', path: ['env', 'T'] }]);
  const e = await rejection(k.call('settings', 'settings/resolve-all', {}));
  t.match(e, { code: 'ALBEDO_INVALID_CONFIG', data: { issues: [{ server: 'a', path: ['env', 'T'] }] } });
  const w = await rejection(k.call('settings', 'settings/apply', { plan: { op: 'put', name: 'b', entry: { command: 'y' } } }));
  t.match(w, { code: 'ALBEDO_INVALID_CONFIG', data: { broken: true } }, 'no write over a broken file');
  writeFileSync(file, JSON.stringify({ mcp: { servers: { a: { command: '/bin/true' } } } }));
  await until(() => changed.length > 0, 10_000, 'the fix');
  t.match(changed[0], { cause: 'file', servers: [{ name: 'a', change: 'added' }] });
  t.same(
    (await k.call('settings', 'settings/resolve-all', {})).servers.map((s) => s.name),
    ['a'],
  );
});
