// Who may talk to the daemon, and what its errors look like (issue 11 item
// 2): the bearer token (GET /v1/health aside), a loopback Host (DNS
// rebinding), no foreign Origin; errors `{ error: { code, message, path?,
// outcome? } }` with a field path for bad input and nothing written; the
// OpenAPI document is valid 3.1 and lists every route.
import t from 'tap';
import http from 'node:http';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { newTag, tempHome } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon, type Reply } from './harness.ts';

t.setTimeout(170_000);

/** A raw request with exactly these headers (Host included): undici and fetch decide Host themselves. */
function raw(d: Daemon, headers: Record<string, string>, target = '/v1/mcp/servers'): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: d.info.port, method: 'GET', path: target, headers, setHost: false }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => {
          text += c;
        })
        .on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

type Tap = {
  equal(a: unknown, b: unknown, m: string): void;
  same(a: unknown, b: unknown, m: string): void;
  ok(v: unknown, m: string): void;
};

/** The error body's shape: only these fields, never a stack. */
function errorShape(t: Tap, r: Reply | { status: number; body: any }, status: number, code: string, what: string): void {
  t.equal(r.status, status, `${what}: status ${status}`);
  t.equal(r.body?.error?.code, code, `${what}: ${code}`);
  t.equal(typeof r.body.error.message, 'string', `${what}: a message`);
  t.same(Object.keys(r.body), ['error'], `${what}: only { error }`);
  t.ok(
    Object.keys(r.body.error).every((k) => ['code', 'message', 'path', 'outcome'].includes(k)),
    `${what}: only code, message, path, outcome`,
  );
}

t.test('the guard and the error bodies', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const port = d.info.port;
  const token = d.info.token;

  t.test('the bearer token', async (t) => {
    const none = await d.call('GET', '/v1/mcp/servers', { token: null });
    errorShape(t, none, 401, 'ALBEDO_UNAUTHORIZED', 'no token');
    t.match(none.headers['www-authenticate'], /^Bearer /);
    const wrong = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    errorShape(t, await d.call('GET', '/v1/mcp/servers', { token: wrong }), 401, 'ALBEDO_UNAUTHORIZED', 'wrong token');
    errorShape(t, await d.call('GET', '/v1/mcp/servers', { token: 'short' }), 401, 'ALBEDO_UNAUTHORIZED', 'a token of another length');
    const basic = await d.call('GET', '/v1/mcp/servers', { token: null, headers: { authorization: `Basic ${token}` } });
    errorShape(t, basic, 401, 'ALBEDO_UNAUTHORIZED', 'not Bearer');
    errorShape(t, await d.call('GET', '/openapi.json', { token: null }), 401, 'ALBEDO_UNAUTHORIZED', 'the document needs it too');
    errorShape(
      t,
      await d.call('GET', '/v1/nothing-here', { token: null }),
      401,
      'ALBEDO_UNAUTHORIZED',
      'an unknown route without a token: no probing',
    );
    errorShape(t, await d.call('GET', '/v1/nothing-here'), 404, 'ALBEDO_NOT_FOUND', 'an unknown route with the token');
    const lower = await d.call('GET', '/v1/mcp/servers', { token: null, headers: { authorization: `bearer ${token}` } });
    t.equal(lower.status, 200, 'the scheme is case-insensitive');
  });

  t.test("Host must be a loopback name with the daemon's port", async (t) => {
    const auth = { authorization: `Bearer ${token}` };
    for (const host of [
      `evil.example:${port}`,
      `127.0.0.1:${port + 1}`,
      '127.0.0.1',
      `127.0.0.2:${port}`,
      `localhost.evil.example:${port}`,
      '',
    ]) {
      errorShape(t, await raw(d, { ...auth, host }), 421, 'ALBEDO_BAD_HOST', `Host ${JSON.stringify(host)}`);
    }
    errorShape(t, await raw(d, auth), 421, 'ALBEDO_BAD_HOST', 'no Host at all');
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
      t.equal((await raw(d, { ...auth, host })).status, 200, `Host ${host} is served`);
    }
    const absolute = await raw(d, { ...auth, host: `127.0.0.1:${port}` }, 'http://evil.example/v1/mcp/servers');
    errorShape(t, absolute, 421, 'ALBEDO_BAD_HOST', 'an absolute URL of another host');
  });

  t.test("a foreign Origin is refused, the daemon's own is not", async (t) => {
    const foreign = [
      'http://evil.example',
      'null',
      `http://127.0.0.1:${port + 1}`,
      `https://127.0.0.1:${port}`,
      `http://localhost.evil.example:${port}`,
    ];
    for (const origin of foreign) {
      errorShape(t, await d.call('GET', '/v1/mcp/servers', { headers: { origin } }), 403, 'ALBEDO_BAD_ORIGIN', `Origin ${origin}`);
    }
    const write = await d.call('PUT', srv('x'), { headers: { origin: 'http://evil.example' }, body: sdkServer() });
    errorShape(t, write, 403, 'ALBEDO_BAD_ORIGIN', 'a write from another origin');
    t.notOk(existsSync(path.join(home, 'extensions.json')), 'and it wrote nothing');
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      t.equal((await d.call('GET', '/v1/mcp/servers', { headers: { origin } })).status, 200, `Origin ${origin} is the daemon's own`);
    }
  });

  t.test(
    'GET /v1/health needs no token and says only that the daemon is up; everything else, and every spelling around it, still does',
    async (t) => {
      const r = await d.call('GET', '/v1/health', { token: null });
      t.equal(r.status, 200);
      t.same(r.body, { ok: true, version: d.info.version }, 'ok and the version, nothing more');
      t.same((await d.call('GET', '/v1/health?verbose=1', { token: null })).status, 200, 'a query aside');
      errorShape(
        t,
        await d.call('GET', '/v1/health', { token: null, headers: { origin: 'http://evil.example' } }),
        403,
        'ALBEDO_BAD_ORIGIN',
        'a foreign Origin is still refused',
      );
      errorShape(
        t,
        await raw(d, { host: `evil.example:${port}` }, '/v1/health'),
        421,
        'ALBEDO_BAD_HOST',
        'a foreign Host is still refused',
      );
      t.equal(
        (await raw(d, { host: `127.0.0.1:${port}` }, `http://127.0.0.1:${port}/v1/health`)).status,
        200,
        "absolute-form, the daemon's own host",
      );
      for (const p of ['/v1/health/../mcp/servers', '/v1/health/', '/v1/%68ealth', '//v1/health', '/v1/health/x', '/V1/HEALTH']) {
        errorShape(t, await raw(d, { host: `127.0.0.1:${port}` }, p), 401, 'ALBEDO_UNAUTHORIZED', `${p} needs the token`);
      }
      errorShape(
        t,
        await raw(d, { host: `127.0.0.1:${port}` }, `http://127.0.0.1:${port}/v1/health/../mcp/servers`),
        401,
        'ALBEDO_UNAUTHORIZED',
        'an absolute-form URL that normalises elsewhere needs the token',
      );
      errorShape(t, await d.call('POST', '/v1/health', { token: null }), 401, 'ALBEDO_UNAUTHORIZED', 'only GET is open');
    },
  );

  t.test('GET /v1/status: the process, the counts, the service workers; it needs the token', async (t) => {
    errorShape(t, await d.call('GET', '/v1/status', { token: null }), 401, 'ALBEDO_UNAUTHORIZED', 'no token');
    const r = await d.call('GET', '/v1/status');
    t.equal(r.status, 200);
    t.match(r.body, { pid: d.info.pid, version: d.info.version, port, home, sessions: 0, servers: { total: 0, enabled: 0 }, signIns: 0 });
    t.ok(Date.parse(r.body.startedAt) <= Date.now() && r.body.uptimeMs >= 0, 'when it started, how long ago');
    for (const svc of ['transport', 'settings', 'catalogue', 'composer']) {
      t.ok(r.body.services[svc].length >= 1, `${svc} has a slot`);
      // A transport worker that no call has needed yet may still be starting.
      t.ok(
        r.body.services[svc].every((s: { state: string; healthy: boolean }) => ['starting', 'ready'].includes(s.state) && s.healthy),
        `${svc}: up`,
      );
    }
    for (const svc of ['settings', 'composer']) {
      t.same(
        r.body.services[svc].map((s: { state: string }) => s.state),
        ['ready'],
        `${svc}: ready (the daemon serves once they answered)`,
      );
    }
    t.same(r.body.services.oauth, [], 'the oauth service starts with the first sign-in');
    t.notOk(r.text.includes(token), 'never the token');
  });

  t.test("bad input: 4xx with a stable code and the field's path, nothing written", async (t) => {
    const json = { 'content-type': 'application/json' };
    const http1 = 'http://127.0.0.1:1/mcp';
    const cases: Array<[string, string, Parameters<Daemon['call']>[2], number, string, Array<string | number>]> = [
      ['a number for a string', srv('x'), { body: { command: 3 } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'command']],
      ['a required field missing', srv('x'), { body: { args: [] } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'command']],
      [
        'an http field (the url decides the variant)',
        srv('x'),
        { body: { url: 'ftp://h/mcp' } },
        400,
        'ALBEDO_INVALID_ARGUMENT',
        ['body', 'url'],
      ],
      ['an unknown field', srv('x'), { body: { url: http1, bogus: 1 } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'bogus']],
      ['an unknown type', srv('x'), { body: { type: 'carrier-pigeon' } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'type']],
      [
        'an inlined secret',
        srv('x'),
        { body: { command: 'x', env: { T: 'literal' } } },
        400,
        'ALBEDO_INVALID_ARGUMENT',
        ['body', 'env', 'T'],
      ],
      [
        'a bad bearer token',
        srv('x'),
        { body: { url: http1, secrets: { bearer: 'has space' } } },
        400,
        'ALBEDO_INVALID_ARGUMENT',
        ['body', 'secrets', 'bearer'],
      ],
      [
        'an http secret for a stdio server',
        srv('x'),
        { body: { command: 'x', enabled: false, secrets: { bearer: 'tok' } } },
        400,
        'ALBEDO_INVALID_CONFIG',
        ['body', 'secrets', 'bearer'],
      ],
      ['a reserved name', srv('__proto__'), { body: { command: 'x' } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['params', 'name']],
      ['a bad query value', srv('x') + '?dry_run=maybe', { body: { command: 'x' } }, 400, 'ALBEDO_INVALID_ARGUMENT', ['query', 'dry_run']],
      ['malformed JSON', srv('x'), { raw: '{"command":', headers: json }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body']],
      [
        'not JSON',
        srv('x'),
        { raw: 'command=x', headers: { 'content-type': 'text/plain' } },
        415,
        'ALBEDO_INVALID_ARGUMENT',
        ['headers', 'content-type'],
      ],
      [
        'a body over 1 MiB',
        srv('x'),
        { raw: JSON.stringify({ command: 'x', args: ['y'.repeat(2 * 1024 * 1024)] }), headers: json },
        413,
        'ALBEDO_TOO_LARGE',
        ['body'],
      ],
    ];
    for (const [what, p, o, status, code, want] of cases) {
      const r = await d.call('PUT', p, o);
      errorShape(t, r, status, code, what);
      t.same(r.body.error.path, want, `${what}: path`);
    }
    for (const method of ['PATCH', 'GET']) {
      const r = await d.call(method, srv('absent'), method === 'PATCH' ? { body: { args: [] } } : {});
      errorShape(t, r, 404, 'ALBEDO_NOT_FOUND', `${method} of no server`);
      t.same(r.body.error.path, ['params', 'name']);
    }
    t.notOk(existsSync(path.join(home, 'extensions.json')), 'nothing was written');
    t.notOk(existsSync(path.join(home, 'creds.json')), 'no credentials either');
  });

  t.test('GET /openapi.json is generated from the route schemas and is valid OpenAPI 3.1', async (t) => {
    const r = await d.call('GET', '/openapi.json');
    t.equal(r.status, 200);
    const validator = new Validator();
    const res = await validator.validate(r.body);
    t.same(res.errors ?? [], [], 'no validation errors');
    t.equal(res.valid, true, 'valid');
    t.equal(validator.version, '3.1');
    const paths = r.body.paths as Record<string, Record<string, unknown>>;
    const routes = Object.entries(paths)
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    t.same(
      routes,
      [
        'DELETE /v1/mcp/servers/{name}',
        'GET /v1/mcp',
        'GET /v1/mcp/servers',
        'GET /v1/mcp/servers/{name}',
        'GET /v1/mcp/servers/{name}/tools',
        'PATCH /v1/mcp/servers/{name}',
        'POST /v1/mcp/servers/{name}/disable',
        'POST /v1/mcp/servers/{name}/enable',
        'PUT /v1/mcp/servers/{name}',
        'DELETE /v1/sessions/{id}',
        'DELETE /v1/acp/sessions/{id}/attachment',
        'GET /v1/acp/sessions',
        'GET /v1/acp/sessions/{id}',
        'PATCH /v1/acp/sessions/{id}',
        'POST /v1/acp/attach',
        'POST /v1/acp/sessions',
        'POST /v1/acp/sessions/{id}/lease',
        'PUT /v1/acp/sessions/{id}/overlay',
        'GET /v1/sessions',
        'GET /v1/sessions/{id}',
        'GET /v1/sessions/{id}/context',
        'GET /v1/sessions/{id}/events',
        'GET /v1/sessions/{id}/tools',
        'PATCH /v1/sessions/{id}',
        'POST /v1/sessions',
        'POST /v1/sessions/{id}/activity',
        'POST /v1/sessions/{id}/calls',
        'POST /v1/sessions/{id}/compacted',
        'POST /v1/sessions/{id}/lease',
        'POST /v1/sessions/{id}/reload',
        'PATCH /v1/mcp',
        'GET /v1/health',
        'GET /v1/status',
        'PUT /v1/auth/logins/{login}',
        'GET /v1/auth/logins/{login}',
        'DELETE /v1/auth/logins/{login}',
        'POST /v1/auth/logins/{login}/callback',
        'POST /v1/ui/links',
        'GET /v1/ui/session',
        'POST /v1/ui/logout',
        'POST /v1/ui/command-line',
        'POST /v1/sessions/{id}/search',
        'GET /v1/sessions/{id}/results/{result}',
        'GET /v1/gateways',
        'GET /v1/gateways/{name}',
        'PUT /v1/gateways/{name}',
        'DELETE /v1/gateways/{name}',
        'POST /v1/gateways/{name}/tokens',
        'DELETE /v1/gateways/{name}/tokens',
        'DELETE /v1/gateways/{name}/tokens/{id}',
      ].sort(),
    );
    t.ok(r.body.components.schemas.ServerPut && r.body.components.schemas.Error, 'the request and error schemas are named components');
    t.same(r.body.security, [{ bearer: [] }, { cookie: [] }], "every route needs the bearer token or the web pane's cookie…");
    t.same(paths['/v1/health']!.get, { ...(paths['/v1/health']!.get as object), security: [] }, '…but GET /v1/health, which says so');
    const server = r.body.components.schemas.Server;
    t.ok(server.properties.state && server.properties.auth, 'the Server DTO has state and auth');
    t.ok(r.body.components.schemas.Login && r.body.components.schemas.McpSettingsPatch, 'the sign-in and PATCH /v1/mcp shapes are named');
  });
});
