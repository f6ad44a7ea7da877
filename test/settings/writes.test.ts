// Settings writes (issue 15, item 1): putServer/removeServer keep other
// extensions' sections and other servers, write atomically (a failed write
// leaves the file byte-identical and no temporary file), change a server's
// entry and its credentials together or not at all (a failed creds write
// puts extensions.json back; faults injected by a hook and by a real
// filesystem fault), keep the OAuth record the oauth worker writes beside
// the typed secrets, and never put a secret in an error, an event or a
// listing.
import t from 'tap';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { SettingsStore, type SettingsOptions } from '../../services/settings/store.ts';
import { FileCredsStore, type OAuthRecord } from '../../services/oauth/store.ts';
import { rejection, tempHome } from '../helpers.ts';

const ENV = { PATH: '/usr/bin:/bin', MY_TOKEN: 'env-secret-value-1' };

async function open(home: string, over: Partial<SettingsOptions> = {}): Promise<{ s: SettingsStore; events: Array<[string, unknown]> }> {
  const events: Array<[string, unknown]> = [];
  const s = await new SettingsStore({ home, env: ENV, onEvent: (n, p) => events.push([n, p]), ...over }).open(false);
  return { s, events };
}

const bytes = (f: string): Buffer | null => (existsSync(f) ? readFileSync(f) : null);
const temps = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.tmp'));
const credsOf = (home: string): any => JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8'));

t.test('putServer and removeServer keep everything else in the file, in place', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const original = {
    skills: { dir: '/x' },
    mcp: { servers: { a: { command: 'a' } }, retryMs: 1000 },
    enabled: { mcp: true, other: false },
  };
  writeFileSync(file, JSON.stringify(original));
  const { s, events } = await open(home);
  events.length = 0;
  const added = await s.putServer('b', { type: 'http', url: 'https://b.example/mcp', enabledTools: ['x'] });
  t.match(added, { name: 'b', change: 'added', enabled: true, fingerprint: /^[0-9a-f]{64}$/ });
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  t.same(
    doc,
    {
      skills: { dir: '/x' },
      mcp: { servers: { a: { command: 'a' }, b: { type: 'http', url: 'https://b.example/mcp', enabledTools: ['x'] } }, retryMs: 1000 },
      enabled: { mcp: true, other: false },
    },
    'other sections, servers and keys kept; the entry written as given',
  );
  t.same(Object.keys(doc), ['skills', 'mcp', 'enabled'], 'in their places');
  t.match(events, [['settings/changed', { cause: 'write', servers: [{ name: 'b', change: 'added' }] }]]);
  const updated = await s.putServer('a', { command: 'a', args: ['--v'] });
  t.equal(updated.change, 'updated');
  t.same(Object.keys(s.get().servers), ['a', 'b']);
  const removed = await s.removeServer('a');
  t.same(removed, { name: 'a', change: 'removed', enabled: false, fingerprint: null });
  t.same(Object.keys(JSON.parse(readFileSync(file, 'utf8')).mcp.servers), ['b']);
  t.equal((await rejection(s.removeServer('a'))).code, 'ALBEDO_NOT_FOUND');
  t.equal(statSync(path.join(home, 'creds.json'), { throwIfNoEntry: false }), undefined, 'no credentials, no creds.json');
});

t.test('bad input is refused with issues naming the server and field, and changes nothing', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, JSON.stringify({ mcp: { servers: { a: { command: 'a' } } } }));
  const { s } = await open(home);
  const before = bytes(file);
  const cases: Array<[string, () => Promise<unknown>, Array<string | number>]> = [
    ['entry', () => s.putServer('x', { type: 'stdio', command: '' }), ['command']],
    ['name', () => s.putServer('__proto__', { command: 'x' }), []],
    ['patch field', () => s.putServer('x', { url: 'https://x.example/' }, { bearerToken: 'has space' }), ['secrets', 'bearerToken']],
    ['patch for the other transport', () => s.putServer('x', { command: 'x' }, { bearerToken: 'tok' }), ['secrets', 'bearerToken']],
    [
      'token beside bearerTokenEnvVar',
      () => s.putServer('x', { url: 'https://x.example/', bearerTokenEnvVar: 'MY_TOKEN' }, { bearerToken: 'tok' }),
      ['secrets'],
    ],
    ['token beside oauth', () => s.putServer('x', { url: 'https://x.example/', oauth: {} }, { bearerToken: 'tok' }), ['secrets']],
    [
      'header named twice',
      () =>
        s.putServer('x', { url: 'https://x.example/', headers: { 'X-K': { env: 'MY_TOKEN' } } }, { header: { name: 'x-k', value: 'v' } }),
      ['secrets', 'header', 'name'],
    ],
    [
      'env named twice',
      () => s.putServer('x', { command: 'x', env: { A: { env: 'MY_TOKEN' } } }, { env: { A: 'v' } }),
      ['secrets', 'env', 'A'],
    ],
  ];
  for (const [what, put, where] of cases) {
    const e = await rejection(put());
    t.equal(e.code, 'ALBEDO_INVALID_CONFIG', what);
    const issues = (e.data as { issues: Array<{ server: string; path: unknown[] }> }).issues;
    const named = issues.some(
      (i) => (i.server === 'x' || i.server === '__proto__') && JSON.stringify(i.path.slice(0, where.length)) === JSON.stringify(where),
    );
    t.ok(named, what, { issues });
  }
  t.same(bytes(file), before, 'the file is byte-identical');
  t.notOk(existsSync(path.join(home, 'creds.json')), 'no credentials written');
  t.same(Object.keys(s.get().servers), ['a']);
});

t.test('a write that fails leaves the file byte-identical and no temporary file', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, '{ "mcp": { "servers": { "a": { "command": "a" } } }, "keep": "formatting" }\n');
  await (await open(home)).s.putServer('h', { url: 'https://h.example/mcp' }, { bearerToken: 'first-token' });
  const before = bytes(file);
  const credsBefore = bytes(path.join(home, 'creds.json'));
  const s2 = await open(home, {
    hooks: {
      beforeConfigRename: () => {
        throw new Error('injected: disk full');
      },
    },
  });
  await rejection(s2.s.putServer('h', { url: 'https://h.example/mcp' }, { bearerToken: 'second-token' }));
  await rejection(s2.s.removeServer('a'));
  t.same(bytes(file), before, 'extensions.json byte-identical');
  t.same(bytes(path.join(home, 'creds.json')), credsBefore, 'creds.json untouched (the config half failed first)');
  t.same(temps(home), [], 'no temporary file left');
  t.same(s2.events.filter(([n]) => n === 'settings/changed').length, 1, 'only the opening load was published');
  t.ok(Object.hasOwn(s2.s.get().servers, 'a'), 'settings in force unchanged');
});

t.test('entry and credentials change together: a failed creds write puts extensions.json back', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const credsFile = path.join(home, 'creds.json');
  writeFileSync(file, JSON.stringify({ mcp: { servers: { h: { url: 'https://h.example/mcp' } } } }));
  const ok = await open(home);
  await ok.s.putServer('h', { url: 'https://h.example/mcp' }, { bearerToken: 'old-token' });
  const before = bytes(file);
  const credsBefore = bytes(credsFile);

  // A hook that throws just before creds.json's rename.
  const hooked = await open(home, {
    hooks: {
      beforeCredsRename: () => {
        throw new Error('injected: creds write failed');
      },
    },
  });
  await rejection(hooked.s.putServer('h', { url: 'https://moved.example/mcp' }, { bearerToken: 'new-token' }));
  t.same(bytes(file), before, 'extensions.json restored byte for byte');
  t.same(bytes(credsFile), credsBefore, 'creds.json unchanged');
  t.same(temps(home), [], 'no temporary file left');
  t.equal((hooked.s.get().servers.h as { url: string }).url, 'https://h.example/mcp', 'the old entry stays in force');
  await rejection(hooked.s.removeServer('h'));
  t.same(bytes(file), before, 'a failed removal is put back too');

  // A real filesystem fault: creds.json is not a file.
  rmSync(credsFile);
  mkdirSync(credsFile);
  const broken = await open(home);
  const e = await rejection(broken.s.putServer('h', { url: 'https://moved.example/mcp' }, { bearerToken: 'new-token' }));
  t.equal(e.code, 'ALBEDO_INVALID_CONFIG');
  t.same(bytes(file), before, 'extensions.json restored after a real creds failure');
  t.same(temps(home), []);
  t.equal((broken.s.get().servers.h as { url: string }).url, 'https://h.example/mcp', 'the old entry stays in force');
  const e2 = await rejection((async () => broken.s.resolve('h'))());
  t.match(
    e2.data,
    { server: 'h', reason: 'invalid_credentials' },
    'and a creds.json that cannot be read fails resolution, never connecting without it',
  );
});

const oauthRecord = (url: string): OAuthRecord => ({
  url,
  state: 'signed_in',
  issuer: 'https://as.example',
  account: 'alice',
  tokens: {
    accessToken: 'oauth-access-secret',
    tokenType: 'Bearer',
    refreshToken: 'oauth-refresh-secret',
    issuer: 'https://as.example',
    obtainedAt: 1,
  },
  updatedAt: 0,
});

t.test('typed secrets and the OAuth record of one server live side by side; removing the server removes both', async (t) => {
  const home = tempHome(t);
  const credsFile = path.join(home, 'creds.json');
  writeFileSync(credsFile, JSON.stringify({ providers: { keep: 'me' } }), { mode: 0o600 });
  const { s } = await open(home);
  const url = 'https://k.example/mcp';
  const oauth = new FileCredsStore(credsFile);
  await oauth.update('k', url, () => ({ record: oauthRecord(url), value: undefined }));
  await s.putServer('k', { url, oauth: {} }, { oauthClient: { clientId: 'cid', clientSecret: 'client-secret-1' } });
  await oauth.update('k', url, (cur) => ({
    record: { ...cur!, tokens: { ...cur!.tokens!, accessToken: 'oauth-access-secret-2' } },
    value: undefined,
  }));
  const c = credsOf(home);
  t.equal(c.mcp.k.oauth.tokens.accessToken, 'oauth-access-secret-2', "the oauth worker's write kept");
  t.same(c.mcp.k.secrets.oauthClient, { clientId: 'cid', clientSecret: 'client-secret-1' }, 'beside the typed secrets');
  t.same(c.providers, { keep: 'me' }, 'other content of creds.json kept');
  t.equal(statSync(credsFile).mode & 0o777, 0o600, 'mode 0600');
  // A blank patch keeps the stored secret; null removes it.
  await s.putServer('k', { url, oauth: {} });
  t.ok(credsOf(home).mcp.k.secrets.oauthClient, 'no patch keeps what is stored');
  await s.putServer('k', { url, oauth: {} }, { oauthClient: null });
  t.notOk(credsOf(home).mcp.k.secrets, 'null removes it');
  t.ok(credsOf(home).mcp.k.oauth, 'the OAuth record stays');
  await s.removeServer('k');
  t.notOk(credsOf(home).mcp.k, 'the whole entry of the server is gone');
  t.same(credsOf(home).providers, { keep: 'me' });
});

t.test('no secret value reaches an error, an event or a listing', async (t) => {
  const home = tempHome(t);
  const secrets = [
    'env-secret-value-1',
    'typed-bearer-SECRET',
    'typed-header-SECRET',
    'typed-env-SECRET',
    'client-SECRET',
    'file-SECRET',
    'line\nbreak-SECRET',
    'oauth-access-secret',
    'oauth-refresh-secret',
    'has space-SECRET',
  ];
  writeFileSync(path.join(home, 'secret-file'), 'file-SECRET');
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({
      mcp: {
        servers: {
          f: { command: '/bin/true', env: { A: { file: 'secret-file' }, B: { env: 'MY_TOKEN' } } },
          nl: { url: 'https://nl.example/mcp', headers: { 'X-K': { env: 'NEWLINE' } } },
        },
      },
    }),
  );
  const { s, events } = await open(home, { env: { ...ENV, NEWLINE: 'line\nbreak-SECRET' } });
  const errors: unknown[] = [];
  const catchIt = async (p: Promise<unknown> | (() => unknown)): Promise<void> => {
    try {
      await (typeof p === 'function' ? p() : p);
    } catch (err) {
      errors.push(err);
    }
  };
  await s.putServer(
    'b',
    { url: 'https://b.example/mcp' },
    { bearerToken: 'typed-bearer-SECRET', header: { name: 'X-H', value: 'typed-header-SECRET' } },
  );
  await s.putServer('e', { command: '/bin/true' }, { env: { T: 'typed-env-SECRET' } });
  await s.putServer('o', { url: 'https://o.example/mcp', oauth: {} }, { oauthClient: { clientId: 'c', clientSecret: 'client-SECRET' } });
  const oUrl = 'https://o.example/mcp';
  await new FileCredsStore(path.join(home, 'creds.json')).update('o', oUrl, () => ({ record: oauthRecord(oUrl), value: undefined }));
  await catchIt(s.putServer('b', { url: 'https://b.example/mcp', bearerTokenEnvVar: 'MY_TOKEN' }, { bearerToken: 'typed-bearer-SECRET' }));
  await catchIt(s.putServer('b', { url: 'https://b.example/mcp' }, { bearerToken: 'has space-SECRET' }));
  await catchIt(s.putServer('b', { url: 'https://b.example/mcp' }, { header: { name: 'X-H', value: 'line\nbreak-SECRET' } }));
  await catchIt(s.putServer('e', { command: '/bin/true', env: { T: { env: 'MY_TOKEN' } } }, { env: { T: 'typed-env-SECRET' } }));
  await catchIt(() => s.resolve('nl'));
  await catchIt(() => s.resolveAll());
  // Hand edits that make resolution fail for the stored secrets, then a broken file.
  writeFileSync(
    path.join(home, 'extensions.json'),
    JSON.stringify({
      mcp: {
        servers: {
          b: { url: 'https://other.example/mcp' },
          e: { command: '/bin/true', env: { T: { env: 'MY_TOKEN' } } },
          o: { url: 'https://o.example/mcp', oauth: { clientId: 'x' } },
        },
      },
    }),
  );
  await s.reload();
  for (const n of ['b', 'e', 'o']) await catchIt(() => s.resolve(n));
  writeFileSync(path.join(home, 'extensions.json'), '{"mcp": {"servers": {"z": {"command": "x", "env": {"T": "env-secret-value-1"}}}}}');
  await s.reload();
  writeFileSync(path.join(home, 'extensions.json'), '{"mcp": {"servers": {"z": {"command": "x", "env": {"T": env-secret-value-1}}}}}');
  await s.reload();
  t.ok(errors.length >= 8, `errors gathered: ${errors.length}`);
  t.ok(events.length >= 4, `events gathered: ${events.length}`);
  const seen = [
    ...errors.map((e) => `${JSON.stringify(e)} ${(e as Error).message} ${(e as Error).stack}`),
    ...events.map((e) => JSON.stringify(e)),
    JSON.stringify(s.get()),
  ].join('\n');
  for (const v of secrets)
    t.notOk(seen.includes(v) || seen.includes(JSON.stringify(v).slice(1, -1)), `${JSON.stringify(v)} appears nowhere`);
});
