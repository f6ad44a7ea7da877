// Resolving a server of extensions.json (issue 15, item 1): named secrets
// looked up, a missing variable or file failing with its specific reason and
// the field path (never connecting without it), typed secrets from creds.json
// merged in; and the fingerprint — moved by a secret's value and by an OAuth
// sign-in's identity, not by a token refresh or another server, and the same
// in another process.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SettingsStore } from '../../services/settings/store.ts';
import { FileCredsStore, type OAuthRecord } from '../../services/oauth/store.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { NODE, ROOT, tempHome } from '../helpers.ts';

const BASE_ENV = { PATH: '/usr/bin:/bin', HOME: '/home/someone', MY_DOCS_TOKEN: 'docs-secret-1', MY_SEARCH_TOKEN: 'search-secret-1' };

function writeSettings(home: string, doc: unknown): void {
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify(doc, null, 2));
}

async function open(home: string, env: Record<string, string> = BASE_ENV): Promise<SettingsStore> {
  return new SettingsStore({ home, env }).open(false);
}

/** The error `fn` throws (an AlbedoError), for its code and data. */
function thrown(fn: () => unknown): AlbedoError {
  try {
    fn();
  } catch (err) {
    if (AlbedoError.is(err)) return err;
    throw err;
  }
  throw new Error('expected an error');
}

const stdioDoc = (env: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  mcp: { servers: { docs: { type: 'stdio', command: '/usr/local/bin/docs-mcp', args: ['--root', '/srv/docs'], env, ...extra } } },
});

const httpDoc = (extra: Record<string, unknown>) => ({ mcp: { servers: { docs: { url: 'https://s.example/mcp', ...extra } } } });

t.test('a missing variable or file fails resolve with the reason and the field, and names the server', async (t) => {
  const home = tempHome(t);
  mkdirSync(path.join(home, 'secrets'));
  writeFileSync(path.join(home, 'secrets', 'empty'), '');
  writeFileSync(path.join(home, 'secrets', 'big'), 'x'.repeat(70 * 1024));
  const cases: Array<[string, unknown, Array<string | number>, string]> = [
    ['env var unset', stdioDoc({ DOCS_TOKEN: { env: 'NOT_SET_ANYWHERE' } }), ['env', 'DOCS_TOKEN'], 'missing_env'],
    ['file absent', stdioDoc({ DOCS_TOKEN: { file: 'secrets/none' } }), ['env', 'DOCS_TOKEN'], 'missing_file'],
    ['file is a directory', stdioDoc({ DOCS_TOKEN: { file: 'secrets' } }), ['env', 'DOCS_TOKEN'], 'unreadable_file'],
    ['file empty', stdioDoc({ DOCS_TOKEN: { file: 'secrets/empty' } }), ['env', 'DOCS_TOKEN'], 'empty_file'],
    ['file too large', stdioDoc({ DOCS_TOKEN: { file: 'secrets/big' } }), ['env', 'DOCS_TOKEN'], 'file_too_large'],
    ['cwd absent', stdioDoc({}, { cwd: 'no/such/dir' }), ['cwd'], 'missing_cwd'],
    ['bearer var unset', httpDoc({ bearerTokenEnvVar: 'UNSET_TOKEN' }), ['bearerTokenEnvVar'], 'missing_env'],
    ['bearer var empty', httpDoc({ bearerTokenEnvVar: 'EMPTY' }), ['bearerTokenEnvVar'], 'missing_env'],
    ['header var unset', httpDoc({ headers: { 'X-Key': { env: 'UNSET' } } }), ['headers', 'X-Key'], 'missing_env'],
    [
      'oauth secret file absent',
      httpDoc({ oauth: { clientId: 'c', clientSecret: { file: '/no/such/secret' } } }),
      ['oauth', 'clientSecret'],
      'missing_file',
    ],
  ];
  for (const [what, doc, where, reason] of cases) {
    writeSettings(home, doc);
    const s = await open(home, { ...BASE_ENV, EMPTY: '' });
    const e = thrown(() => s.resolve('docs'));
    t.equal(e.code, 'ALBEDO_INVALID_CONFIG', what);
    t.equal(e.outcome, 'not_run', `${what}: not run`);
    t.same(e.data, { server: 'docs', path: where, reason }, `${what}: data names server, path and reason`);
    const all = thrown(() => s.resolveAll());
    t.match(all.data, { issues: [{ server: 'docs', path: where, reason }] }, `${what}: the whole preparation fails`);
  }
});

t.test("named secrets resolve into the transport's form: env and file values, relative paths from the home", async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'token'), 'from-a-file\n');
  writeSettings(home, stdioDoc({ DOCS_TOKEN: { env: 'MY_DOCS_TOKEN' }, OTHER: { file: 'token' } }));
  const s = await open(home);
  const r = s.resolve('docs');
  t.equal(r.server.type, 'stdio');
  if (r.server.type !== 'stdio') return;
  t.same(
    r.server.env,
    { PATH: BASE_ENV.PATH, HOME: BASE_ENV.HOME, DOCS_TOKEN: 'docs-secret-1', OTHER: 'from-a-file' },
    'only HOME, PATH, TMPDIR inherited',
  );
  t.not(r.server.cwd, home, 'cwd does not default to the home (issue 20: an empty directory of its own)');
  t.notOk(path.relative(home, r.server.cwd) === '' || !path.relative(home, r.server.cwd).startsWith('..'), 'nor to anything in it');
  t.match(r.fingerprint, /^[0-9a-f]{64}$/);
  t.same([r.enabled, r.isolate, r.enabledTools, r.disabledTools], [true, false, null, []]);
});

t.test('typed secrets from creds.json are merged in; secrets saved for another URL are never sent to a new one', async (t) => {
  const home = tempHome(t);
  writeSettings(home, {});
  const s = await open(home);
  await s.putServer('h', { url: 'https://h.example/mcp' }, { bearerToken: 'typed-bearer-1' });
  await s.putServer(
    'k',
    { url: 'https://k.example/mcp', oauth: { scope: 'read' } },
    { header: { name: 'X-Api-Key', value: 'typed-header-1' }, oauthClient: { clientId: 'cid', clientSecret: 'typed-client-secret-1' } },
  );
  await s.putServer('e', { command: '/bin/true', env: { A: { env: 'MY_DOCS_TOKEN' } } }, { env: { B: 'typed-env-1' } });
  const h = s.resolve('h').server;
  t.same(
    h.type === 'http' && [h.headers, h.auth],
    [{ Authorization: 'Bearer typed-bearer-1' }, null],
    'a bearer token fixes Authorization (no OAuth)',
  );
  const k = s.resolve('k').server;
  t.same(k.type === 'http' && k.headers, { 'X-Api-Key': 'typed-header-1' });
  t.match(k.type === 'http' && k.auth, {
    name: 'k',
    credsPath: path.join(home, 'creds.json'),
    oauth: { clientId: 'cid', clientSecret: 'typed-client-secret-1', scope: 'read' },
  });
  const e = s.resolve('e').server;
  t.match(e.type === 'stdio' && e.env, { A: 'docs-secret-1', B: 'typed-env-1' });

  // A hand edit moves h to another URL: its token stays where it was saved.
  writeSettings(home, {
    mcp: { servers: { h: { url: 'https://elsewhere.example/mcp' }, e: { command: '/bin/true', env: { B: { env: 'MY_DOCS_TOKEN' } } } } },
  });
  await s.reload();
  t.same(thrown(() => s.resolve('h')).data, { server: 'h', path: ['url'], reason: 'credentials_for_other_url' });
  t.same(thrown(() => s.resolve('e')).data, { server: 'e', path: ['env', 'B'], reason: 'conflict' }, 'a name both in the file and stored');
  // Saving it again (the user confirms the new URL) binds the kept token to it.
  await s.putServer('h', { url: 'https://elsewhere.example/mcp' });
  const moved = s.resolve('h').server;
  t.same(moved.type === 'http' && moved.headers, { Authorization: 'Bearer typed-bearer-1' });
});

const signedIn = (url: string, over: Partial<OAuthRecord> = {}, tokens: Partial<NonNullable<OAuthRecord['tokens']>> = {}): OAuthRecord => ({
  url,
  state: 'signed_in',
  issuer: 'https://as.example',
  account: 'alice',
  client: { issuer: 'https://as.example', clientId: 'client-1', authMethod: 'none', kind: 'dcr', registeredAt: 1 },
  tokens: {
    accessToken: 'at-1',
    tokenType: 'Bearer',
    refreshToken: 'rt-1',
    scope: 'read write',
    issuer: 'https://as.example',
    obtainedAt: 1,
    ...tokens,
  },
  updatedAt: 0,
  ...over,
});

t.test("the fingerprint moves with a secret's value and a sign-in, not with another server, a timeout or a refresh", async (t) => {
  const home = tempHome(t);
  const doc = (searchTimeout = 30000, docsArgs = ['--root', '/srv/docs']) => ({
    mcp: {
      servers: {
        docs: {
          type: 'stdio',
          command: '/usr/local/bin/docs-mcp',
          args: docsArgs,
          env: { DOCS_TOKEN: { env: 'MY_DOCS_TOKEN' }, K: { file: 'k' } },
        },
        search: { type: 'http', url: 'https://mcp.example.com/mcp', bearerTokenEnvVar: 'MY_SEARCH_TOKEN', callTimeoutMs: searchTimeout },
        signin: { type: 'http', url: 'https://o.example/mcp' },
      },
    },
  });
  writeFileSync(path.join(home, 'k'), 'file-secret-1');
  writeSettings(home, doc());
  const fp = async (env = BASE_ENV): Promise<Record<string, string>> => {
    const s = await open(home, env);
    return Object.fromEntries(s.resolveAll().servers.map((x) => [x.name, x.fingerprint]));
  };
  const a = await fp();
  t.same(await fp(), a, 'the same config gives the same fingerprints');

  const b = await fp({ ...BASE_ENV, MY_DOCS_TOKEN: 'docs-secret-2' });
  t.not(b.docs, a.docs, "a named variable's value moves it");
  t.equal(b.search, a.search, 'other servers keep theirs');
  writeFileSync(path.join(home, 'k'), 'file-secret-2');
  const c = await fp();
  t.not(c.docs, a.docs, "a secret file's contents move it");
  writeFileSync(path.join(home, 'k'), 'file-secret-1');
  t.not((await fp({ ...BASE_ENV, MY_SEARCH_TOKEN: 'search-secret-2' })).search, a.search, "a bearer token's value moves it");

  writeSettings(home, doc(45000));
  const d = await fp();
  t.equal(d.search, a.search, 'a timeout keeps the saved catalogue');
  writeSettings(home, doc(30000, ['--root', '/srv/other']));
  const e = await fp();
  t.not(e.docs, a.docs, 'what runs moves it');
  t.same([e.search, e.signin], [a.search, a.signin], 'and only for that server');
  writeSettings(home, doc());

  const s = await open(home);
  await s.putServer('typed', { url: 'https://t.example/mcp' }, { bearerToken: 'typed-1' });
  const t1 = s.resolve('typed').fingerprint;
  await s.putServer('typed', { url: 'https://t.example/mcp' }, { bearerToken: 'typed-2' });
  t.not(s.resolve('typed').fingerprint, t1, "a stored secret's value moves it");

  // OAuth, through the real store as the oauth worker writes it.
  const creds = new FileCredsStore(path.join(home, 'creds.json'));
  const url = 'https://o.example/mcp';
  const put = (rec: OAuthRecord | null) => creds.update('signin', url, () => ({ record: rec, value: undefined }));
  const none = s.resolve('signin').fingerprint;
  await put({ url, state: 'needs_sign_in', reason: 'not_signed_in', updatedAt: 0 });
  t.equal(s.resolve('signin').fingerprint, none, 'needing a sign-in is no sign-in');
  await put(signedIn(url));
  const alice = s.resolve('signin').fingerprint;
  t.not(alice, none, 'a sign-in moves it');
  await put(signedIn(url, {}, { accessToken: 'at-2', refreshToken: 'rt-2', obtainedAt: 2 }));
  t.equal(s.resolve('signin').fingerprint, alice, 'a refresh (rotated tokens) keeps it');
  await put(signedIn(url, { account: 'bob' }));
  const bob = s.resolve('signin').fingerprint;
  t.not(bob, alice, 'another account moves it');
  await put(signedIn(url, {}, { scope: 'read write admin' }));
  t.not(s.resolve('signin').fingerprint, alice, 'a step-up (more scope) moves it');
  await put(
    signedIn(url, { client: { issuer: 'https://as.example', clientId: 'client-2', authMethod: 'none', kind: 'dcr', registeredAt: 2 } }),
  );
  t.not(s.resolve('signin').fingerprint, alice, 'another client moves it');
  await put({ ...signedIn(url), state: 'signed_out', tokens: undefined, account: undefined });
  t.equal(s.resolve('signin').fingerprint, none, 'signed out is no sign-in');
  t.equal(s.resolve('docs').fingerprint, a.docs, 'sign-ins of one server leave the others alone');
});

t.test('the fingerprint is the same in another process', async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'k'), 'file-secret-1');
  writeSettings(home, {
    mcp: {
      servers: {
        docs: { command: '/usr/local/bin/docs-mcp', args: ['a', 'b'], env: { Z: { env: 'MY_DOCS_TOKEN' }, A: { file: 'k' } } },
        search: {
          url: 'https://mcp.example.com/mcp',
          headers: { 'X-B': { env: 'MY_SEARCH_TOKEN' }, 'X-A': { env: 'MY_DOCS_TOKEN' } },
          oauth: { scope: 'x' },
        },
      },
    },
  });
  const s = await open(home);
  await s.putServer('typed', { url: 'https://t.example/mcp' }, { header: { name: 'X-K', value: 'v-1' } });
  const searchUrl = 'https://mcp.example.com/mcp';
  await new FileCredsStore(path.join(home, 'creds.json')).update('search', searchUrl, () => ({
    record: signedIn(searchUrl),
    value: undefined,
  }));
  const here = Object.fromEntries(s.resolveAll().servers.map((x) => [x.name, x.fingerprint]));
  const code = `
    const { SettingsStore } = await import(${JSON.stringify(path.join(ROOT, 'services/settings/store.ts'))});
    const s = await new SettingsStore({ home: process.argv[1], env: JSON.parse(process.argv[2]) }).open(false);
    console.log(JSON.stringify(Object.fromEntries(s.resolveAll().servers.map((x) => [x.name, x.fingerprint]))));`;
  const out = execFileSync(NODE, ['--input-type=module', '-e', code, home, JSON.stringify(BASE_ENV)], { encoding: 'utf8' });
  t.same(JSON.parse(out), here);
  t.equal(Object.keys(here).length, 3);
});
