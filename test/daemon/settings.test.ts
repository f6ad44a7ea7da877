// The settings routes over the real settings service, in the real daemon
// (issue 11 item 2, "Settings"): servers CRUD with their typed secrets,
// ETag / If-Match (412 changes nothing), strict save (a server that cannot
// start → 409 with extensions.json and creds.json byte for byte as they
// were; one answering 401 is kept; a disabled one is not tried), and 50
// parallel PATCHes from two clients with none lost.
import t from 'tap';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Agent } from 'undici';
import { NODE, newTag, taggedPids, tempHome, until, waitNoLeftovers } from '../helpers.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { entry, sdkServer, srv, startDaemon, type Daemon } from './harness.ts';

t.setTimeout(170_000);

const read = (home: string, file: string): Buffer | null => {
  const p = path.join(home, file);
  return existsSync(p) ? readFileSync(p) : null;
};
const servers = (home: string): Record<string, any> => JSON.parse(read(home, 'extensions.json')!.toString()).mcp.servers;
const creds = (home: string): Record<string, any> => JSON.parse(read(home, 'creds.json')?.toString() ?? '{}').mcp ?? {};

t.test('settings over HTTP', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  // MISSING_VAR is deliberately not set; NAMED_TOKEN is, for a header named in the entry.
  const d = await startDaemon(t, home, { tag, env: { NAMED_TOKEN: 'named-token-value-5x' } });
  const bodies: string[] = [];
  const api = async (...a: Parameters<Daemon['call']>) => {
    const r = await d.call(...a);
    bodies.push(r.text, JSON.stringify(r.headers));
    return r;
  };

  t.test(
    'PUT creates (201) and replaces (200), trying the server; GET one and all carry the ETag; the file keeps what was sent',
    async (t) => {
      const sent = sdkServer();
      const r = await api('PUT', srv('sdk'), { body: sent });
      t.equal(r.status, 201, 'created');
      t.same(r.body.check, { tried: true, result: 'connected' }, 'the server was tried and connected');
      t.same(
        [r.body.saved, r.body.created, r.body.server.name, r.body.server.enabled, r.body.server.lastError],
        [true, true, 'sdk', true, null],
      );
      t.equal(r.body.server.config.command, NODE);
      t.same(
        [r.body.server.tools, r.body.server.description],
        [5, 'Fixture server for Albedo tests.'],
        'what the try discovered is kept: its tool count and description (the instructions; the server has no serverInfo.description)',
      );
      t.same(servers(home).sdk, sent, 'extensions.json holds the entry as sent (no defaults spelled out)');
      t.same(taggedPids(tag), [], 'the tried server was reaped');
      const one = await api('GET', srv('sdk'));
      t.equal(one.status, 200);
      t.same(one.body, r.body.server);
      t.match(one.headers.etag, /^"[A-Za-z0-9_-]+"$/, 'a strong ETag');
      t.equal(one.headers.etag, r.headers.etag, 'the write answered with the version it made');
      const all = await api('GET', '/v1/mcp/servers');
      t.same([all.status, all.body.servers.map((s: { name: string }) => s.name), all.body.invalid], [200, ['sdk'], null]);
      t.match(all.headers.etag, /^"/);
      const again = await api('PUT', srv('sdk'), { body: sdkServer({ args: [...(sent.args as string[]), '--tools', '2'] }) });
      t.same([again.status, again.body.created, again.body.server.tools], [200, false, 7], 'replaced, and the new discovery kept');
      t.not(again.headers.etag, one.headers.etag, 'a new version');
      t.not((await api('GET', '/v1/mcp/servers')).headers.etag, all.headers.etag, "the list's version moved too");
      const mcp = await api('GET', '/v1/mcp');
      t.same([mcp.status, mcp.body.retryMs, mcp.body.enabled], [200, 30_000, { mcp: true, 'editor-mcp': true }]);
      t.match(mcp.headers.etag, /^"/);
      const slash = await api('PUT', srv('h.example/mcp'), { body: { url: 'http://127.0.0.1:1/mcp', enabled: false } });
      t.same([slash.status, slash.body.check], [201, { tried: false, reason: 'disabled' }], 'a disabled server is saved untried');
      t.same([slash.body.server.tools, slash.body.server.description], [null, ''], 'never connected: no tools known, no description');
      t.ok(servers(home)['h.example/mcp'], 'a name with a slash, URL-encoded in the path');
      t.equal((await api('DELETE', srv('h.example/mcp'))).status, 204);
    },
  );

  t.test('typed secrets: only in creds.json, reported as set, blank keeps, null removes', async (t) => {
    const http = { url: 'http://127.0.0.1:1/mcp', enabled: false };
    let r = await api('PUT', srv('web'), {
      body: { ...http, secrets: { bearer: 'bearer-secret-1x', header: { name: 'X-Key', value: 'header-secret-2x' } } },
    });
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.same(r.body.server.secrets, { bearer: true, header: 'X-Key', env: [], oauth_client: false });
    t.notOk(read(home, 'extensions.json')!.includes('secret-'), 'no value in extensions.json');
    t.equal(statSync(path.join(home, 'creds.json')).mode & 0o777, 0o600, 'creds.json is 0600');
    t.same([creds(home).web.secrets.bearerToken, creds(home).web.secrets.header.value], ['bearer-secret-1x', 'header-secret-2x']);
    r = await api('PUT', srv('web'), { body: { ...http, secrets: { bearer: '', header: { name: 'X-Key', value: '' } } } });
    t.equal(r.status, 200);
    t.same(
      [creds(home).web.secrets.bearerToken, creds(home).web.secrets.header.value],
      ['bearer-secret-1x', 'header-secret-2x'],
      'blank keeps both',
    );
    r = await api('PUT', srv('web'), { body: { ...http, secrets: { header: { name: 'X-Other', value: '' } } } });
    const want = [400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'secrets', 'header', 'value']];
    t.same([r.status, r.body.error.code, r.body.error.path], want, 'nothing stored to keep');
    r = await api('PATCH', srv('web'), {
      body: { secrets: { bearer: null, oauth_client: { client_id: 'cid', client_secret: 'client-secret-3x' } } },
    });
    t.equal(r.status, 200, JSON.stringify(r.body));
    t.same(
      r.body.server.secrets,
      { bearer: false, header: 'X-Key', env: [], oauth_client: true },
      'null removed the token; the client is stored',
    );
    t.equal(creds(home).web.secrets.bearerToken, undefined);
    t.equal(creds(home).web.secrets.oauthClient.clientSecret, 'client-secret-3x');
    const env = { API_KEY: 'env-secret-4x', OTHER: 'env-secret-5x' };
    r = await api('PUT', srv('tool'), { body: { ...entry(NODE, ['-e', '0']), enabled: false, secrets: { env } } });
    t.same(r.body.server.secrets.env, ['API_KEY', 'OTHER']);
    r = await api('PATCH', srv('tool'), { body: { secrets: { env: { API_KEY: '', OTHER: null } } } });
    t.same(creds(home).tool.secrets.env, { API_KEY: 'env-secret-4x' }, 'blank kept API_KEY, null removed OTHER');
    r = await api('PATCH', srv('tool'), { body: { secrets: { env: { NEVER_SET: '' } } } });
    t.same([r.status, r.body.error.path], [400, ['body', 'secrets', 'env', 'NEVER_SET']]);
  });

  t.test('If-Match: a stale version gets 412 and changes nothing; a changed secret is a new version', async (t) => {
    const v1 = (await api('GET', srv('web'))).headers.etag as string;
    const ok = await api('PATCH', srv('web'), { body: { callTimeoutMs: 5_000 }, headers: { 'if-match': v1 } });
    t.equal(ok.status, 200, 'the current version: accepted');
    const v2 = ok.headers.etag as string;
    t.not(v2, v1);
    const before = [read(home, 'extensions.json'), read(home, 'creds.json')];
    for (const [method, p, body] of [
      ['PATCH', srv('web'), { callTimeoutMs: 6_000 }],
      ['PUT', srv('web'), { url: 'http://127.0.0.1:2/mcp', enabled: false }],
      ['DELETE', srv('web'), undefined],
      ['POST', srv('web', '/disable'), undefined],
    ] as const) {
      const r = await api(method, p, { body, headers: { 'if-match': v1 } });
      const want = [412, 'ALBEDO_PRECONDITION_FAILED', ['headers', 'if-match']];
      t.same([r.status, r.body.error.code, r.body.error.path], want, `${method} ${p} with a stale If-Match`);
    }
    t.same([read(home, 'extensions.json'), read(home, 'creds.json')], before, 'nothing changed');
    t.equal(
      (await api('PUT', srv('web'), { body: { url: 'http://127.0.0.1:1/mcp', enabled: false }, headers: { 'if-none-match': '*' } })).status,
      412,
      'If-None-Match: * on an existing server',
    );
    t.equal((await api('PATCH', srv('absent'), { body: {}, headers: { 'if-match': v2 } })).status, 412, 'If-Match on no server');
    const client = { client_id: 'cid', client_secret: 'client-secret-6x' };
    const r = await api('PATCH', srv('web'), { body: { secrets: { oauth_client: client } }, headers: { 'if-match': v2 } });
    t.same(r.body.server.secrets, (await api('GET', srv('web'))).body.secrets, 'the response shows the same secrets as before…');
    t.not(r.headers.etag, v2, "…but the version moved: another client's If-Match will not overwrite a secret it never saw");
    t.equal(
      (await api('PUT', srv('new'), { body: { url: 'http://127.0.0.1:1/mcp', enabled: false }, headers: { 'if-none-match': '*' } })).status,
      201,
      'If-None-Match: * creates',
    );
  });

  t.test('PATCH merges into the entry as written; enable tries, disable does not', async (t) => {
    let r = await api('PUT', srv('later'), { body: { command: '/nonexistent/server', enabled: false } });
    t.same([r.status, r.body.check], [201, { tried: false, reason: 'disabled' }], 'switched off: saved without a try');
    const before = read(home, 'extensions.json');
    r = await api('POST', srv('later', '/enable'));
    t.same(
      [r.status, r.body.error.code, r.body.error.outcome],
      [409, 'ALBEDO_SPAWN_FAILED', 'not_run'],
      'turning on a server that cannot start is refused',
    );
    t.same(read(home, 'extensions.json'), before, 'and changes nothing');
    r = await api('PATCH', srv('later'), {
      body: { ...sdkServer(), enabled: null },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    t.same(
      [r.status, r.body.check],
      [200, { tried: true, result: 'connected' }],
      'null removed `enabled` (default on), so the patched server was tried',
    );
    t.same(servers(home).later, sdkServer(), 'merged: the entry is what was written, nothing more');
    r = await api('POST', srv('later', '/disable'));
    t.same(
      [r.status, r.body.check, r.body.server.enabled, servers(home).later.enabled],
      [200, { tried: false, reason: 'disabled' }, false, false],
    );
    r = await api('POST', srv('later', '/enable'));
    t.same([r.status, r.body.check.result, servers(home).later.enabled], [200, 'connected', true]);
    r = await api('POST', srv('absent', '/enable'));
    t.same([r.status, r.body.error.code], [404, 'ALBEDO_NOT_FOUND']);
  });

  t.test("strict save: a server that cannot start → 409 with the error's code; both files stay byte for byte", async (t) => {
    const files = (): Array<Buffer | null> => [read(home, 'extensions.json'), read(home, 'creds.json')];
    const before = files();
    t.ok(before[0] && before[1], 'both files exist');
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['a missing command', { command: '/nonexistent/server', secrets: { env: { NEW_SECRET: 'new-secret-7x' } } }, 'ALBEDO_SPAWN_FAILED'],
      [
        'a server that exits',
        entry(NODE, ['-e', 'console.error("key=" + process.env.API_KEY); process.exit(3)'], {
          secrets: { env: { API_KEY: 'leak-me-8x' } },
        }),
        'ALBEDO_SERVER_EXITED',
      ],
      ['a server that never answers', entry(NODE, ['-e', 'setInterval(() => {}, 1000)'], { startupTimeoutMs: 1_500 }), 'ALBEDO_TIMEOUT'],
      ['a variable that is not set', entry(NODE, [], { env: { X: { env: 'MISSING_VAR' } } }), 'ALBEDO_INVALID_CONFIG'],
    ];
    for (const [what, body, code] of cases) {
      for (const [method, name] of [
        ['PUT', 'sdk'],
        ['PUT', 'brand-new'],
        ['PATCH', 'sdk'],
      ] as const) {
        const r = await api(method, srv(name), {
          body: method === 'PATCH' ? { ...body, args: (body.args as string[] | undefined) ?? null } : body,
        });
        t.same([r.status, r.body.error.code, r.body.error.outcome], [409, code, 'not_run'], `${what}: ${method} ${name}`);
        t.same(files(), before, `${what}: ${method} ${name}: extensions.json and creds.json unchanged, byte for byte`);
      }
    }
    const missing = await api('PUT', srv('sdk'), { body: cases[3]![1] });
    t.same(missing.body.error.path, ['body', 'env', 'X'], 'the field that cannot be read');
    t.notOk(
      bodies.some((b) => b.includes('leak-me-8x')),
      'the secret the server printed to stderr is cut out of the error',
    );
    const dry = await api('PUT', srv('sdk') + '?dry_run=true', { body: sdkServer({ callTimeoutMs: 1_234 }) });
    t.same([dry.status, dry.body.saved, dry.body.check.result], [200, false, 'connected'], 'dry_run: tried and reported');
    t.same(files(), before, 'dry_run wrote nothing');
    // A try that timed out answers before its server is reaped (the transport's open rejects first); it goes shortly after.
    t.same(await waitNoLeftovers(tag), [], 'every tried server was reaped');
  });

  t.test('a server that answers 401 is kept, needing a sign-in', async (t) => {
    const stack = await startOAuthStack();
    t.teardown(() => stack.close());
    const r = await api('PUT', srv('secure'), { body: { url: stack.mcpUrl, headers: { 'X-Named': { env: 'NAMED_TOKEN' } } } });
    t.same([r.status, r.body.check], [201, { tried: true, result: 'needs_sign_in' }]);
    t.equal(servers(home).secure.url, stack.mcpUrl);
  });

  t.test('DELETE removes the server and its credentials', async (t) => {
    t.ok(creds(home).web, 'web has a creds.json record');
    t.equal((await api('DELETE', srv('web'))).status, 204);
    t.notOk(Object.hasOwn(servers(home), 'web'));
    t.notOk(Object.hasOwn(creds(home), 'web'), 'its record is gone from creds.json');
    const again = await api('DELETE', srv('web'));
    t.same([again.status, again.body.error.code], [404, 'ALBEDO_NOT_FOUND']);
    const later = (await api('GET', srv('later'))).body;
    t.equal(later.tools, 5, 'later has a saved catalogue');
    t.equal((await api('DELETE', srv('later'))).status, 204);
    const back = await api('PUT', srv('later'), { body: { ...later.config, enabled: false } });
    t.same(
      [back.status, back.body.server.tools],
      [201, null],
      'added back under the same name and config: its old catalogue was dropped with it',
    );
  });

  t.test('50 parallel PATCHes from two clients: every one lands', async (t) => {
    t.equal((await api('PUT', srv('many'), { body: { command: 'x', enabled: false } })).status, 201);
    const clients = [new Agent({ connections: 8 }), new Agent({ connections: 8 })];
    t.teardown(() => Promise.all(clients.map((c) => c.close())));
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        d.call('PATCH', srv('many'), { body: { env: { [`V${i}`]: { env: `VAR_${i}` } } }, dispatcher: clients[i % 2] }),
      ),
    );
    t.same(
      rs.map((r) => r.status),
      Array(50).fill(200),
      'all accepted',
    );
    const env = (await api('GET', srv('many'))).body.config.env;
    t.same(Object.keys(env).sort(), Array.from({ length: 50 }, (_, i) => `V${i}`).sort(), 'none lost');
    t.equal(Object.keys(servers(home).many.env).length, 50, 'and all in the file');
  });

  t.test("each server's state and auth as the daemon knows them without dialling", async (t) => {
    const file = path.join(home, 'extensions.json');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    // Entries a strict save would refuse or try, written by hand as a user would.
    Object.assign(doc.mcp.servers, {
      unset: entry(NODE, [], { env: { X: { env: 'MISSING_VAR' } } }),
      remote: { url: 'http://127.0.0.1:1/mcp' },
      fixed: { url: 'http://127.0.0.1:1/mcp', bearerTokenEnvVar: 'NAMED_TOKEN' },
    });
    writeFileSync(file, JSON.stringify(doc, null, 2));
    await until(
      async () => (await api('GET', '/v1/mcp/servers')).body.servers.some((x: { name: string }) => x.name === 'fixed'),
      30_000,
      'the edit',
    );
    const byName = Object.fromEntries((await api('GET', '/v1/mcp/servers')).body.servers.map((x: any) => [x.name, x]));
    t.match(
      byName.unset,
      { state: 'error', auth: null, lastError: { code: 'ALBEDO_INVALID_CONFIG', reason: 'missing_env' } },
      'a variable not set',
    );
    t.match(
      byName.remote,
      { state: 'configured', auth: { state: 'none' }, tools: null },
      'an http server never reached: OAuth not known to be needed',
    );
    t.match(byName.fixed, { state: 'configured', auth: null }, 'a fixed Authorization: no OAuth');
    t.match(
      byName.secure,
      { state: 'needs_sign_in', auth: { state: 'needs_sign_in', reason: 'not_signed_in' } },
      'the server that answered 401',
    );
    t.match(byName.sdk, { state: 'discovered', auth: null, tools: 7 }, 'a catalogue saved for it as configured');
    t.match(byName.many, { state: 'disabled' });
    // An OAuth record that changes what auth reports but not the sign-in (none before, none after): the version stays.
    const before = await api('GET', srv('remote'));
    const credsFile = path.join(home, 'creds.json');
    const c = JSON.parse(readFileSync(credsFile, 'utf8'));
    c.mcp.remote = { oauth: { url: 'http://127.0.0.1:1/mcp', state: 'needs_sign_in', reason: 'token_rejected', updatedAt: Date.now() } };
    writeFileSync(credsFile, JSON.stringify(c, null, 2), { mode: 0o600 });
    await until(async () => (await api('GET', srv('remote'))).body.auth.state === 'needs_sign_in', 30_000, 'the record to be read');
    const after = await api('GET', srv('remote'));
    t.match(after.body, { state: 'needs_sign_in', auth: { reason: 'token_rejected' } });
    t.equal(after.headers.etag, before.headers.etag, 'state and auth are reports, not the version: an If-Match read before still holds');
  });

  t.test('no secret value in any response or daemon log line', async (t) => {
    bodies.push(...d.lines);
    for (const s of [
      'bearer-secret-1x',
      'header-secret-2x',
      'client-secret-3x',
      'env-secret-4x',
      'env-secret-5x',
      'client-secret-6x',
      'new-secret-7x',
      'leak-me-8x',
      'named-token-value-5x',
      d.info.token,
    ]) {
      t.notOk(
        bodies.some((b) => b.includes(s)),
        `${s.slice(0, 8)}… never in a response or a log line`,
      );
    }
  });
});
