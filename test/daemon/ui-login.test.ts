// The web pane's login and the API by cookie (issue 12 item 2): a one-time
// link (POST /v1/ui/links, bearer only; and the one `albedo daemon` prints)
// is exchanged once for an HttpOnly, SameSite=Strict cookie named with the
// port; a spent, expired or made-up code is a 403 page and no cookie. The
// cookie then stands for the bearer token on every /v1 route, the event
// stream included, but a change by it needs the daemon's own Origin and the
// session's CSRF token (else 403, nothing written); logout ends it. The
// pane's command-line route splits as the CLI does. No code, cookie or CSRF
// token appears in an error body or the daemon's log.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { newTag, tempHome, until } from '../helpers.ts';
import { sdkServer, srv, startDaemon, type Daemon, type Reply } from './harness.ts';

t.setTimeout(170_000);

const COOKIE = (port: number): RegExp => new RegExp(`^albedo_ui_${port}=([A-Za-z0-9_-]{43}); HttpOnly; SameSite=Strict; Path=/$`);

/** Follows a login link as a browser would (one GET, no redirect followed): the answer, and the cookie it set. */
async function visit(d: Daemon, url: string): Promise<Reply & { cookie: string | null; csrf: string | null }> {
  const u = new URL(url);
  const r = await d.call('GET', `${u.pathname}${u.search}`, { token: null });
  const set = r.headers['set-cookie'];
  const m = typeof set === 'string' ? COOKIE(d.info.port).exec(set) : null;
  // The page's token comes in the redirect's fragment, which only the daemon's own page reads.
  const k = /^\/ui\/#k=([A-Za-z0-9_-]{43})$/.exec(String(r.headers.location ?? ''));
  return { ...r, cookie: m ? `albedo_ui_${d.info.port}=${m[1]}` : null, csrf: k ? k[1]! : null };
}

const mint = async (d: Daemon): Promise<{ url: string; expiresAt: string }> => {
  const r = await d.call('POST', '/v1/ui/links');
  if (r.status !== 201) throw new Error(`POST /v1/ui/links: ${r.status} ${r.text}`);
  return r.body;
};

t.test('login links, the cookie, CSRF and logout', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag });
  const port = d.info.port;
  const origin = `http://127.0.0.1:${port}`;
  const errors: string[] = [];
  const secrets: string[] = [];
  const call = async (method: string, p: string, o: Parameters<Daemon['call']>[2] = {}): Promise<Reply> => {
    const r = await d.call(method, p, o);
    if (r.status >= 400) errors.push(r.text);
    return r;
  };

  t.test("the daemon's stderr, a pipe, gets no link at start, only how to get one (a terminal gets one: pane-link.test.ts)", async (t) => {
    await until(() => d.lines.some((l) => /^albedo: web pane: /.test(l)), 30_000, 'the web pane line');
    const line = d.lines.find((l) => /^albedo: web pane: /.test(l))!;
    t.notMatch(line, /code=/, 'no login code');
    t.match(line, /albedo open/, 'how to get one');
  });

  t.test('a link logs in once: 303 to /ui/ with the cookie, exactly; again, or made up, or expired: 403 and no cookie', async (t) => {
    const link = await mint(d);
    t.match(link.url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/ui/login\\?code=[A-Za-z0-9_-]{43,}$`));
    const left = Date.parse(link.expiresAt) - Date.now();
    t.ok(left > 14 * 60_000 && left <= 15 * 60_000, 'valid for 15 minutes');
    secrets.push(new URL(link.url).searchParams.get('code')!);
    const first = await visit(d, link.url);
    t.equal(first.status, 303);
    t.match(first.headers.location, /^\/ui\/#k=[A-Za-z0-9_-]{43}$/, 'to the pane, its CSRF token in the fragment');
    t.match(first.headers['set-cookie'], COOKIE(port), 'HttpOnly; SameSite=Strict; Path=/; named with the port');
    t.equal(first.headers['cache-control'], 'no-store');
    t.match(first.headers['content-security-policy'], /default-src 'none'/);
    secrets.push(first.cookie!.split('=')[1]!);
    for (const [what, url] of [
      ['the same link again', link.url],
      ['a made-up code', `${origin}/ui/login?code=${'A'.repeat(43)}`],
      ['no code', `${origin}/ui/login`],
      ['an empty code', `${origin}/ui/login?code=`],
    ] as const) {
      const r = await visit(d, url);
      errors.push(r.text);
      t.equal(r.status, 403, `${what}: 403`);
      t.equal(r.headers['set-cookie'], undefined, `${what}: no cookie`);
      t.equal(r.headers['cache-control'], 'no-store', `${what}: not stored`);
      t.match(r.headers['content-type'], /^text\/html/, `${what}: a page`);
      t.match(r.text, /albedo open/, `${what}: it says what to do`);
      t.match(r.headers['content-security-policy'], /default-src 'none'/, `${what}: CSP'd`);
    }
  });

  t.test('the cookie stands for the token; a change needs Origin and the CSRF token', async (t) => {
    const a = await visit(d, (await mint(d)).url);
    const cookie = a.cookie!;
    const csrf = a.csrf!;
    secrets.push(cookie.split('=')[1]!, csrf);
    // Browsers send the cookie to every port of 127.0.0.1: another local server holding it must get nothing with it alone.
    const alone = await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie } });
    t.equal(alone.status, 403, 'the cookie alone, even for a read: 403');
    t.equal(alone.body.error.code, 'ALBEDO_CSRF');
    t.equal((await call('GET', '/v1/ui/session', { token: null, headers: { cookie } })).status, 403, 'nor its session (no token oracle)');
    t.equal(
      (await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie, 'x-albedo-csrf': csrf } })).status,
      200,
      'a read by the cookie and its token',
    );
    t.equal((await call('GET', '/v1/mcp/servers', { token: null })).status, 401, 'neither cookie nor token: 401');
    t.equal(
      (await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie: `albedo_ui_${port + 1}=${cookie.split('=')[1]}` } })).status,
      401,
      "the value under another port's name: 401",
    );
    t.equal(
      (await call('GET', '/v1/mcp/servers', { token: 'not-the-token', headers: { cookie } })).status,
      401,
      'a bad bearer token: 401, cookie or not',
    );
    t.equal(
      (await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie, origin: 'http://evil.example' } })).body.error.code,
      'ALBEDO_BAD_ORIGIN',
      'a foreign Origin: refused',
    );

    const session = await call('GET', '/v1/ui/session', { token: null, headers: { cookie, 'x-albedo-csrf': csrf } });
    t.equal(session.status, 200);
    t.match(session.body, { csrf, expiresAt: String });
    const idle = Date.parse(session.body.expiresAt) - Date.now();
    t.ok(idle > 11 * 3_600_000 && idle <= 12 * 3_600_000, 'it ends after 12 hours unused');
    t.equal((await call('GET', '/v1/ui/session')).status, 404, 'the bearer token has no cookie session: 404');

    // A server saved with the token first, so both files exist to be compared byte for byte.
    t.equal(
      (await call('PUT', srv('kept'), { body: { ...sdkServer(), enabled: false, secrets: { env: { K: 'kept-secret-1x' } } } })).status,
      201,
      'the bearer token: as before, no Origin or CSRF needed',
    );
    const files = (): Array<Buffer | null> =>
      ['extensions.json', 'creds.json'].map((f) => (existsSync(path.join(home, f)) ? readFileSync(path.join(home, f)) : null));
    const before = files();
    t.ok(before.every(Boolean), 'both files exist');
    const body = sdkServer();
    const refused: Array<[string, Record<string, string>, string]> = [
      ['no X-Albedo-CSRF', { cookie, origin }, 'ALBEDO_CSRF'],
      [
        'a wrong X-Albedo-CSRF',
        { cookie, origin, 'x-albedo-csrf': `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` },
        'ALBEDO_CSRF',
      ],
      ['no Origin', { cookie, 'x-albedo-csrf': csrf }, 'ALBEDO_BAD_ORIGIN'],
      ['a foreign Origin', { cookie, origin: 'http://evil.example', 'x-albedo-csrf': csrf }, 'ALBEDO_BAD_ORIGIN'],
      ["another port's Origin", { cookie, origin: `http://127.0.0.1:${port + 1}`, 'x-albedo-csrf': csrf }, 'ALBEDO_BAD_ORIGIN'],
    ];
    for (const [what, headers, code] of refused) {
      const r = await call('PUT', srv('by-cookie'), { token: null, headers, body });
      t.equal(r.status, 403, `${what}: 403`);
      t.equal(r.body?.error?.code, code, `${what}: ${code}`);
      t.equal((await call('DELETE', srv('kept'), { token: null, headers })).status, 403, `${what}: a DELETE neither`);
    }
    const other = await visit(d, (await mint(d)).url);
    const otherCsrf = other.csrf!;
    t.not(otherCsrf, csrf, 'each session has its own token');
    const crossed = await call('PUT', srv('by-cookie'), { token: null, headers: { cookie, origin, 'x-albedo-csrf': otherCsrf }, body });
    t.equal(crossed.body?.error?.code, 'ALBEDO_CSRF', "another session's token is refused");
    t.same(files(), before, 'nothing was written by any refused request');

    const saved = await call('PUT', srv('by-cookie'), { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf }, body });
    t.equal(saved.status, 201, 'cookie + Origin + CSRF: saved (strict save: the server was tried)');
    t.match(saved.body, { saved: true, check: { tried: true, result: 'connected' } });
    t.notSame(files(), before, 'and written');

    const link = await call('POST', '/v1/ui/links', { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf } });
    t.equal(link.status, 401, 'a cookie cannot make login links');
    t.equal(link.body.error.code, 'ALBEDO_UNAUTHORIZED');

    // The event stream by the cookie (EventSource sends it): it ends with session_closed when the session is closed.
    const opened = await call('POST', '/v1/sessions', { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf }, body: {} });
    t.equal(opened.status, 201, 'a session opened by the cookie');
    const bare = await request(`${origin}/v1/sessions/${opened.body.id}/events`, { headers: { cookie } });
    t.equal(bare.statusCode, 403, 'the event stream by the cookie alone: 403');
    await bare.body.dump();
    const stream = await request(`${origin}/v1/sessions/${opened.body.id}/events?csrf=${csrf}`, { headers: { cookie } });
    t.equal(stream.statusCode, 200, 'the event stream by the cookie, its token in the query (an EventSource sends no header)');
    t.match(stream.headers['content-type'], /^text\/event-stream/);
    t.equal(
      (await call('DELETE', `/v1/sessions/${opened.body.id}`, { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf } })).status,
      204,
    );
    t.match(await stream.body.text(), /event: session_closed/, 'the stream saw the session close');

    const out = await call('POST', '/v1/ui/logout', { token: null, headers: { cookie, origin } });
    t.equal(out.body?.error?.code, 'ALBEDO_CSRF', 'logout is a change: it needs the CSRF token');
    const logout = await call('POST', '/v1/ui/logout', { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf } });
    t.equal(logout.status, 204, 'logged out');
    t.equal(logout.headers['set-cookie'], `albedo_ui_${port}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`, 'the cookie cleared');
    t.equal((await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie } })).status, 401, 'the cookie no longer works');
    t.equal((await call('GET', '/v1/ui/session', { token: null, headers: { cookie } })).status, 401, 'not even for its session');
    t.equal(
      (await call('GET', '/v1/mcp/servers', { token: null, headers: { cookie: other.cookie!, 'x-albedo-csrf': otherCsrf } })).status,
      200,
      'the other session lives on',
    );
    secrets.push(other.cookie!.split('=')[1]!, otherCsrf);
  });

  t.test('POST /v1/ui/command-line splits as the CLI does, and refuses what only a shell would do', async (t) => {
    const a = await visit(d, (await mint(d)).url);
    const cookie = a.cookie!;
    const csrf = a.csrf!;
    const byCookie = { token: null, headers: { cookie, origin, 'x-albedo-csrf': csrf } };
    const split = await call('POST', '/v1/ui/command-line', { ...byCookie, body: { line: `npx -y pkg "/srv/my docs" 'it''s'` } });
    t.equal(split.status, 200);
    t.same(split.body, { command: 'npx', args: ['-y', 'pkg', '/srv/my docs', 'its'] });
    t.same(
      (await call('POST', '/v1/ui/command-line', { body: { line: 'node' } })).body,
      { command: 'node', args: [] },
      'with the token too',
    );
    for (const line of ['srv $(id)', 'srv *.ts', "srv 'open", 'API_KEY=x srv', 'srv | tee log', '', '   ']) {
      const r = await call('POST', '/v1/ui/command-line', { ...byCookie, body: { line } });
      t.equal(r.status, 400, `${JSON.stringify(line)}: 400`);
      t.same(
        [r.body.error.code, r.body.error.path],
        ['ALBEDO_INVALID_ARGUMENT', ['body', 'line']],
        `${JSON.stringify(line)}: at body.line`,
      );
      t.ok(r.body.error.message.length > 10, 'with a reason');
    }
    const typed = await call('POST', '/v1/ui/command-line', { body: { line: 3 } });
    t.same([typed.status, typed.body.error.path], [400, ['body', 'line']], 'not a string');
    const extra = await call('POST', '/v1/ui/command-line', { body: { line: 'x', shell: true } });
    t.same([extra.status, extra.body.error.path], [400, ['body', 'shell']], 'an unknown field');
  });

  t.test('no code, cookie or CSRF token in any error body or log line', async (t) => {
    t.ok(secrets.length >= 6, `${secrets.length} secrets gathered`);
    for (const s of secrets) {
      t.notOk(
        errors.some((x) => x.includes(s)),
        'never in an error body',
      );
      t.notOk(
        d.lines.some((l) => l.includes(s)),
        "never in the daemon's log",
      );
    }
  });
});

t.test('an expired link (ALBEDO_UI_LINK_TTL_MS) is a 403 and no cookie', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag(), env: { ALBEDO_UI_LINK_TTL_MS: '1000' } });
  const link = await mint(d);
  const fresh = await mint(d);
  t.ok(Date.parse(link.expiresAt) - Date.now() <= 1_000, 'the TTL is the one set');
  t.equal((await visit(d, fresh.url)).status, 303, 'a link used in time works');
  // Wait for the clock, not for the daemon: the link's end is a time.
  await until(() => Date.now() > Date.parse(link.expiresAt) + 200, 10_000, 'the link to expire');
  const r = await visit(d, link.url);
  t.equal(r.status, 403, 'expired: 403');
  t.equal(r.cookie, null, 'no cookie');
  t.equal(r.headers['set-cookie'], undefined);
});
