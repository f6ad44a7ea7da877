// The gateways routes (issue 22, daemon/gateway-routes.ts) on a real daemon
// over a temp home: PUT / GET / DELETE write the `gateways` section of
// extensions.json as given, every other section kept; a server a gateway
// names but that is not configured is a problem shown, not an error; bad
// names and bodies are 400 at the field, stale versions 412, each with the
// file byte for byte as it was. Tokens: shown once by POST, never by a read,
// a log or the file (0600); a gateway's token opens that gateway only
// (the guard), and revoking (one, all, the gateway's removal) closes it.
import t from 'tap';
import { createHash } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome, until } from '../helpers.ts';
import { spawnDaemon, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const gw = (name: string, suffix = ''): string => `/v1/gateways/${encodeURIComponent(name)}${suffix}`;

t.test('gateways through the API', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const file = path.join(home, 'extensions.json');
  const start = {
    skills: { dir: '/x' },
    mcp: { servers: { filesystem: { command: '/bin/true' }, off: { command: '/bin/true', enabled: false } } },
  };
  writeFileSync(file, JSON.stringify(start));
  const d = await startDaemon(t, home, { tag });
  const bytes = (): Buffer => readFileSync(file);
  const doc = (): any => JSON.parse(bytes().toString());

  t.test('PUT creates and replaces, written as given; GET lists them with kind and problems', async (t) => {
    const claude = { servers: { exclude: ['x'] }, profile: 'anthropic', tools: 'auto' };
    const c = await d.call('PUT', gw('claude'), { body: claude });
    t.equal(c.status, 201, JSON.stringify(c.body));
    t.match(c.headers.etag, /^"/);
    const { problems, ...rest } = c.body;
    t.same(rest, { name: 'claude', definition: { ...claude, enabled: true }, kind: 'composed', tokens: [], clients: [] });
    t.same(
      problems.map((p: any) => [p.code, p.path]),
      [['server_not_configured', ['servers', 'exclude', 0]]],
      'a server it names that is not configured: a problem, not an error',
    );
    t.match(problems[0].message, /"x"/);
    const fs = await d.call('PUT', gw('fs'), { body: { server: 'filesystem' } });
    t.same([fs.status, fs.body.kind, fs.body.problems], [201, 'pass-through', []]);
    const again = await d.call('PUT', gw('fs'), { body: { server: 'off' } });
    t.same([again.status, again.body.problems.map((p: any) => [p.code, p.path])], [200, [['server_disabled', ['server']]]]);
    const later = await d.call('PUT', gw('later'), { body: { server: 'not-yet', enabled: false } });
    t.same([later.status, later.body.problems.map((p: any) => p.code)], [201, ['server_not_configured']], 'a server to come: saved');

    t.same(doc().gateways, { claude, fs: { server: 'off' }, later: { server: 'not-yet', enabled: false } }, 'as given, defaults implicit');
    t.same([doc().skills, doc().mcp], [start.skills, start.mcp], 'the rest of the file as it was');
    t.same(Object.keys(doc()), ['skills', 'mcp', 'gateways']);

    const list = await d.call('GET', '/v1/gateways');
    t.same([list.status, list.body.gateways.map((g: any) => g.name), list.body.invalid], [200, ['claude', 'fs', 'later'], null]);
    const one = await d.call('GET', gw('claude'));
    t.same([one.status, one.headers.etag, one.body.definition], [200, c.headers.etag, c.body.definition]);
    t.same((await d.call('GET', gw('nope'))).status, 404);
  });

  t.test('bad names and bodies: 400 at the field, stale versions 412; the file unchanged', async (t) => {
    const before = bytes();
    const cases: Array<[string, string, unknown, Array<string | number>]> = [
      ['a reserved name', 'add', {}, ['params', 'name']],
      ['a name with a space', 'a b', {}, ['params', 'name']],
      ['a pass-through that composes', 'p', { server: 'filesystem', tools: 'all' }, ['body', 'tools']],
      ['an unknown key', 'p', { servers: {}, bogus: 1 }, ['body', 'bogus']],
      ['a bad mode', 'p', { tools: 'some' }, ['body', 'tools']],
      ['not an object', 'p', ['filesystem'], ['body']],
    ];
    for (const [what, name, body, p] of cases) {
      const r = await d.call('PUT', gw(name), { body });
      t.same([r.status, r.body?.error?.code, r.body?.error?.path], [400, 'ALBEDO_INVALID_ARGUMENT', p], what);
      t.same(bytes(), before, `${what}: the file byte for byte as it was`);
    }
    const v = (await d.call('GET', gw('claude'))).headers.etag as string;
    const stale = await d.call('PUT', gw('claude'), { body: {}, headers: { 'if-match': '"old"' } });
    t.same([stale.status, stale.body.error.code], [412, 'ALBEDO_PRECONDITION_FAILED']);
    const exists = await d.call('PUT', gw('claude'), { body: {}, headers: { 'if-none-match': '*' } });
    t.same([exists.status, exists.body.error.path], [412, ['headers', 'if-none-match']]);
    t.same(bytes(), before, 'nothing written');
    const ok = await d.call('PUT', gw('claude'), { body: { tools: 'deferred' }, headers: { 'if-match': v } });
    t.equal(ok.status, 200, 'the current version: saved');
    t.not(ok.headers.etag, v);
  });

  t.test('tokens: shown once, never read back, open their gateway only', async (t) => {
    const tokensFile = path.join(home, 'gateway-tokens.json');
    const unknown = await d.call('POST', gw('nope', '/tokens'));
    t.same([unknown.status, unknown.body.error.code], [404, 'ALBEDO_NOT_FOUND']);
    const m = await d.call('POST', gw('fs', '/tokens'));
    t.equal(m.status, 201, JSON.stringify(m.body));
    t.match(m.body, { id: /^[0-9a-f]+$/, token: /^albgw_[A-Za-z0-9_-]{43}$/, created: Number });
    t.equal(m.headers['cache-control'], 'no-store');
    const { token, id } = m.body;
    const other = (await d.call('POST', gw('claude', '/tokens'))).body;

    const read = await d.call('GET', gw('fs'));
    t.same(read.body.tokens, [{ id, created: m.body.created }], 'the read shows its id…');
    t.notOk(read.text.includes(token) || (await d.call('GET', '/v1/gateways')).text.includes(token), '…never the token');
    t.equal(statSync(tokensFile).mode & 0o777, 0o600);
    const text = readFileSync(tokensFile, 'utf8');
    t.notOk(text.includes(token.slice(6)), 'the file holds no token in clear…');
    t.ok(text.includes(createHash('sha256').update(token).digest('hex')), '…its SHA-256');

    const at = (name: string, tk: string) => d.call('POST', `/mcp/gateways/${name}`, { token: tk, body: {} });
    t.not((await at('fs', token)).status, 401, "the token opens its gateway (the guard's)");
    t.equal((await at('claude', token)).status, 401, 'not another gateway');
    t.equal((await at('fs', other.token)).status, 401, "another gateway's token does not open it");
    t.equal((await d.call('GET', '/v1/gateways', { token })).status, 401, 'nor the API');

    t.equal((await d.call('DELETE', gw('fs', '/tokens/ffffffff'))).status, 404, 'an unknown id');
    t.equal((await d.call('DELETE', gw('fs', `/tokens/${id}`))).status, 204, 'revoked');
    t.equal((await at('fs', token)).status, 401, 'and closed');
    const two = [(await d.call('POST', gw('fs', '/tokens'))).body, (await d.call('POST', gw('fs', '/tokens'))).body];
    const all = await d.call('DELETE', gw('fs', '/tokens'));
    t.same([all.status, all.body], [200, { revoked: 2 }]);
    for (const x of two) t.equal((await at('fs', x.token)).status, 401, 'every one closed');
    t.notOk(d.lines.join('\n').includes('albgw_'), 'no token in the daemon log');
  });

  t.test('DELETE removes the gateway and revokes its tokens; a hand edit is seen', async (t) => {
    const m = (await d.call('POST', gw('claude', '/tokens'))).body;
    const r = await d.call('DELETE', gw('claude'));
    t.equal(r.status, 204);
    t.notOk(Object.hasOwn(doc().gateways, 'claude'));
    t.equal((await d.call('POST', `/mcp/gateways/claude`, { token: m.token, body: {} })).status, 401, 'its token is revoked');
    t.equal((await d.call('DELETE', gw('claude'))).status, 404, 'gone');
    writeFileSync(file, JSON.stringify({ ...doc(), gateways: { ...doc().gateways, hand: { server: 'filesystem' } } }));
    await until(async () => (await d.call('GET', gw('hand'))).status === 200, 15_000, 'the hand edit');
    t.pass('a gateway written by hand is served by the API');
  });

  t.test('/openapi.json documents the routes', async (t) => {
    const paths = Object.keys((await d.call('GET', '/openapi.json')).body.paths);
    for (const p of ['/v1/gateways', '/v1/gateways/{name}', '/v1/gateways/{name}/tokens', '/v1/gateways/{name}/tokens/{id}'])
      t.ok(paths.includes(p), p);
  });
});

t.test('a malformed gateway-tokens.json: the daemon does not start, and says why', async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'gateway-tokens.json'), '{"tokens": 1}', { mode: 0o600 });
  const s = spawnDaemon(home, { tag: newTag() });
  t.equal(await s.exited, 1);
  t.match(s.lines.join('\n'), /cannot start: ALBEDO_INVALID_CONFIG: gateway-tokens\.json/);
  t.equal(readFileSync(path.join(home, 'gateway-tokens.json'), 'utf8'), '{"tokens": 1}', 'left as it was');
});
