// extensions.json validation (issue 15, item 1): a hand-written example
// parses with the defaults docs/config.md gives; every field of a server, of
// `mcp` and of `enabled` refused with an issue that names the server (null
// outside `mcp.servers`) and the field path; names as protocol/config.ts
// rules them, checked before any object is built from them.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseSettingsDocument, readSettingsFile } from '../../services/settings/file.ts';
import type { SettingsIssue } from '../../protocol/settings.ts';
import { ROOT, tempHome } from '../helpers.ts';
import { SEED_EXAMPLE } from '../fixtures/settings-examples.ts';

t.test('a hand-written example parses, with the defaults', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, JSON.stringify(SEED_EXAMPLE, null, 2));
  const r = readSettingsFile(file);
  if (!r.result.ok) throw new Error(JSON.stringify(r.result.issues));
  const s = r.result.settings;
  t.same(Object.keys(s.servers), ['docs', 'search']);
  t.equal(Object.getPrototypeOf(s.servers), null, 'servers has no prototype');
  t.match(s.servers.docs, {
    type: 'stdio',
    command: '/usr/local/bin/docs-mcp',
    args: ['--root', '/srv/docs'],
    cwd: '/srv/docs',
    env: { DOCS_TOKEN: { env: 'MY_DOCS_TOKEN' } },
    enabled: true,
    disabledTools: [],
    isolate: false,
    startupTimeoutMs: 30000,
    callTimeoutMs: 60000,
  });
  t.equal(s.servers.docs!.enabledTools, undefined, 'no enabledTools: every tool');
  t.match(s.servers.search, {
    type: 'http',
    url: 'https://mcp.example.com/mcp',
    bearerTokenEnvVar: 'MY_SEARCH_TOKEN',
    enabledTools: ['search'],
    callTimeoutMs: 30000,
  });
  t.equal(s.retryMs, 30000, 'retryMs defaults to 30000');
  t.same(s.enabled, { mcp: true, 'editor-mcp': true }, 'both extensions on when `enabled` is absent');

  const full = parseSettingsDocument({
    mcp: { servers: {}, retryMs: 5000 },
    enabled: { mcp: false, 'editor-mcp': false, other: 'theirs' },
  });
  if (!full.ok) throw new Error(JSON.stringify(full.issues));
  t.equal(full.settings.retryMs, 5000);
  t.same(full.settings.enabled, { mcp: false, 'editor-mcp': false });
  const absent = readSettingsFile(path.join(home, 'nothing.json'));
  t.ok(absent.result.ok && Object.keys(absent.result.settings.servers).length === 0, 'an absent file is the defaults');
});

/** [what, document, expected issue (server and path)]. */
type Case = [string, unknown, { server: string | null; path: Array<string | number> }];
const stdio = (extra: Record<string, unknown>): unknown => ({ mcp: { servers: { s1: { type: 'stdio', command: 'x', ...extra } } } });
const http = (extra: Record<string, unknown>): unknown => ({
  mcp: { servers: { h1: { type: 'http', url: 'https://h.example/mcp', ...extra } } },
});
const S = (...p: Array<string | number>) => ({ server: 's1', path: p });
const H = (...p: Array<string | number>) => ({ server: 'h1', path: p });

const CASES: Case[] = [
  ['type', stdio({ type: 'ftp' }), S('type')],
  ['command empty', stdio({ command: '' }), S('command')],
  ['command missing', { mcp: { servers: { s1: { type: 'stdio' } } } }, S('command')],
  ['args not strings', stdio({ args: ['a', 1] }), S('args', 1)],
  ['cwd empty', stdio({ cwd: '' }), S('cwd')],
  ['env key', stdio({ env: { 'BAD-NAME': { env: 'X' } } }), S('env', 'BAD-NAME')],
  ['env value inlined', stdio({ env: { TOKEN: 'literal' } }), S('env', 'TOKEN')],
  ['env value: bad variable name', stdio({ env: { TOKEN: { env: 'not a name' } } }), S('env', 'TOKEN', 'env')],
  ['env value: empty file', stdio({ env: { TOKEN: { file: '' } } }), S('env', 'TOKEN', 'file')],
  ['env value: both', stdio({ env: { TOKEN: { env: 'A', file: 'b' } } }), S('env', 'TOKEN')],
  ['isolate', stdio({ isolate: 'yes' }), S('isolate')],
  ['startupTimeoutMs', stdio({ startupTimeoutMs: -1 }), S('startupTimeoutMs')],
  ['callTimeoutMs', stdio({ callTimeoutMs: 1.5 }), S('callTimeoutMs')],
  ['enabled', stdio({ enabled: 'no' }), S('enabled')],
  ['enabledTools', stdio({ enabledTools: 'search' }), S('enabledTools')],
  ['enabledTools entry', stdio({ enabledTools: ['ok', ''] }), S('enabledTools', 1)],
  ['disabledTools entry', stdio({ disabledTools: [3] }), S('disabledTools', 0)],
  ['unknown field', stdio({ comand: 'typo' }), S()],
  ['http url scheme', http({ url: 'ftp://h.example/' }), H('url')],
  ['http url userinfo', http({ url: 'https://u:p@h.example/' }), H('url')],
  ['http url fragment', http({ url: 'https://h.example/#x' }), H('url')],
  ['http header reserved', http({ headers: { Accept: { env: 'X' } } }), H('headers', 'Accept')],
  ['http header inlined', http({ headers: { 'X-Key': 'literal' } }), H('headers', 'X-Key')],
  ['http bearerTokenEnvVar', http({ bearerTokenEnvVar: '1x' }), H('bearerTokenEnvVar')],
  ['http bearer and Authorization', http({ bearerTokenEnvVar: 'T', headers: { Authorization: { env: 'A' } } }), H('bearerTokenEnvVar')],
  ['http oauth and bearer', http({ bearerTokenEnvVar: 'T', oauth: {} }), H('oauth')],
  ['oauth grant', http({ oauth: { grant: 'password' } }), H('oauth', 'grant')],
  ['oauth clientSecret inlined', http({ oauth: { clientId: 'c', clientSecret: 'literal' } }), H('oauth', 'clientSecret')],
  ['oauth privateKey inlined', http({ oauth: { clientId: 'c', privateKey: 'literal' } }), H('oauth', 'privateKey')],
  ['oauth assertion inlined', http({ oauth: { grant: 'jwt_bearer', assertion: 'literal' } }), H('oauth', 'assertion')],
  [
    'oauth idToken inlined',
    http({ oauth: { grant: 'token_exchange', clientId: 'c', idp: { tokenEndpoint: 'https://i/t', idToken: 'x' } } }),
    H('oauth', 'idp', 'idToken'),
  ],
  ['oauth secret without client', http({ oauth: { clientSecret: { env: 'S' } } }), H('oauth', 'clientId')],
  ['oauth callbackPort', http({ oauth: { callbackPort: 70000 } }), H('oauth', 'callbackPort')],
  ['oauth dpop', http({ oauth: { dpop: 'sometimes' } }), H('oauth', 'dpop')],
  ['oauth clientMetadataUrl', http({ oauth: { clientMetadataUrl: 'http://not-https/' } }), H('oauth', 'clientMetadataUrl')],
  ['oauth unknown field', http({ oauth: { scopes: 'a' } }), H('oauth')],
  ['server entry not an object', { mcp: { servers: { s1: 'npx thing' } } }, S()],
  ['name empty', { mcp: { servers: { '': { command: 'x' } } } }, { server: '', path: [] }],
  ['name constructor', { mcp: { servers: { constructor: { command: 'x' } } } }, { server: 'constructor', path: [] }],
  ['name prototype', { mcp: { servers: { prototype: { command: 'x' } } } }, { server: 'prototype', path: [] }],
  ['retryMs', { mcp: { retryMs: 0 } }, { server: null, path: ['mcp', 'retryMs'] }],
  ['mcp unknown field', { mcp: { server: {} } }, { server: null, path: ['mcp'] }],
  ['mcp.servers not an object', { mcp: { servers: [] } }, { server: null, path: ['mcp', 'servers'] }],
  ['enabled.mcp', { enabled: { mcp: 'yes' } }, { server: null, path: ['enabled', 'mcp'] }],
  ['enabled.editor-mcp', { enabled: { 'editor-mcp': 1 } }, { server: null, path: ['enabled', 'editor-mcp'] }],
  ['not an object', [1, 2], { server: null, path: [] }],
];

t.test('the example of docs/config.md parses', async (t) => {
  const md = readFileSync(path.join(ROOT, 'docs', 'config.md'), 'utf8');
  const section = md.slice(md.indexOf('## `$ALBEDO_HOME/extensions.json`'));
  const json = /```json\n([\s\S]*?)```/.exec(section)?.[1];
  const r = parseSettingsDocument(JSON.parse(json ?? 'null'));
  t.ok(r.ok, 'valid', { issues: r.ok ? [] : r.issues });
  if (r.ok) t.same(Object.keys(r.settings.servers), ['docs', 'search', 'tickets']);
});

t.test("every field's error names the server and the field path", async (t) => {
  for (const [what, doc, want] of CASES) {
    const r = parseSettingsDocument(doc);
    if (r.ok) {
      t.fail(`${what}: accepted`);
      continue;
    }
    const hit = r.issues.find((i: SettingsIssue) => i.server === want.server && JSON.stringify(i.path) === JSON.stringify(want.path));
    t.ok(hit, `${what}: an issue for ${want.server}/${want.path.join('.')}`, { issues: r.issues });
    t.ok(
      r.issues.every((i) => typeof i.message === 'string' && i.message.length > 0),
      `${what}: every issue says what was expected`,
    );
  }
});

t.test("other servers' errors do not hide each other: one issue list for the whole file", async (t) => {
  const r = parseSettingsDocument({ mcp: { servers: { a: { command: '' }, b: { url: 'nope' }, c: { command: 'ok' } }, retryMs: -5 } });
  t.notOk(r.ok);
  if (r.ok) return;
  t.same([...new Set(r.issues.map((i) => i.server))].sort(), [null, 'a', 'b'].sort());
});

t.test('a server named __proto__ in the file is refused as a name and never reaches a prototype', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, '{"mcp":{"servers":{"__proto__":{"command":"polluted"},"ok":{"command":"y"}}}}');
  const r = readSettingsFile(file);
  t.notOk(r.result.ok);
  if (r.result.ok) return;
  t.same(
    r.result.issues.map((i) => [i.server, i.path]),
    [['__proto__', []]],
  );
  t.equal(({} as Record<string, unknown>).command, undefined, 'Object.prototype untouched');
});

t.test('JSON errors say where, never quote the file; an empty file is an error, not "no servers"', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  writeFileSync(file, '{"mcp": {"servers": {"a": {"command": "x", "env": {"T": sk-live-123}}}}}');
  const r = readSettingsFile(file);
  t.notOk(r.result.ok);
  if (!r.result.ok) t.notMatch(JSON.stringify(r.result.issues), /sk-live/, 'the excerpt is not quoted');
  writeFileSync(file, '   \n');
  const e = readSettingsFile(file);
  t.notOk(e.result.ok, 'whitespace only is refused');
  t.equal(readFileSync(file, 'utf8'), '   \n');
});
