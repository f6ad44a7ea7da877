// Sign-in through the daemon's API (issue 11 item 2, "Sign-in";
// docs/design.md, "Sign-in"), end to end against a real authorization server
// (oidc-provider) in front of an official-SDK MCP server, with the browser
// stand-in the OAuth tests use: PUT /v1/auth/logins/mcp:{name} answers the
// authorization URL (the daemon opens no browser), the loopback callback or a
// pasted one completes it, GET reports it, DELETE cancels it; a callback of
// another server's sign-in is refused; a pending sign-in expires (a short TTL
// through the daemon's knob); sign-out is PATCH { secrets: { oauth: null } }.
// A session opened over HTTP while the server needed a sign-in takes it in
// once signed in, and loses it again on sign-out. Every response, event and
// daemon log line of the run is gathered: no token, code or secret value is
// in any of them.
import t from 'tap';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { newTag, tempHome, until } from '../helpers.ts';
import { startOAuthStack, type OAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn, redirectOnly } from '../fixtures/browser.ts';
import { sdkServer, srv, startDaemon, type Daemon, type Reply } from './harness.ts';

t.setTimeout(170_000);

const login = (name: string, suffix = ''): string => `/v1/auth/logins/mcp:${encodeURIComponent(name)}${suffix}`;
const textOf = (result: any): string => result?.content?.[0]?.text;

/** Everything the daemon said during the run (responses, events, log lines), and every secret that must not be in it. */
const said: string[] = [];
const secrets = new Set<string>();

function collectCreds(home: string, stack: OAuthStack): void {
  const file = path.join(home, 'creds.json');
  if (existsSync(file)) {
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { mcp?: Record<string, any> };
    for (const e of Object.values(doc.mcp ?? {})) {
      for (const v of [
        e.oauth?.tokens?.accessToken,
        e.oauth?.tokens?.refreshToken,
        e.oauth?.client?.clientSecret,
        e.oauth?.dpopKey?.d,
        ...(e.oauth?.registrations ?? []).map((r: { clientSecret?: string }) => r.clientSecret),
      ]) {
        if (typeof v === 'string' && v) secrets.add(v);
      }
    }
  }
  for (const h of stack.stats.mcpAuthHeaders) secrets.add(h.replace(/^\S+\s+/, ''));
}

function api(d: Daemon) {
  return async (...a: Parameters<Daemon['call']>): Promise<Reply> => {
    const r = await d.call(...a);
    said.push(r.text, JSON.stringify(r.headers));
    return r;
  };
}

/** Follows a session's event stream; every event is also kept for the leak check. */
async function follow(d: Daemon, id: string) {
  const agent = new Agent();
  const r = await request(`http://127.0.0.1:${d.info.port}/v1/sessions/${id}/events`, {
    headers: { authorization: `Bearer ${d.info.token}`, accept: 'text/event-stream' },
    dispatcher: agent,
  });
  const events: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent: (e) => {
      events.push(e);
      said.push(`${e.event} ${e.data}`);
    },
  });
  const done = (async () => {
    try {
      for await (const chunk of r.body) parser.feed(Buffer.from(chunk).toString('utf8'));
    } catch {
      // closed by the test
    }
  })();
  return {
    events,
    close: async () => {
      r.body.destroy();
      await done;
      await agent.close();
    },
  };
}

/** The callback URL the authorization server redirects to, with `state` replaced. */
function withState(url: string, state: string): string {
  const u = new URL(url);
  u.searchParams.set('state', state);
  return u.href;
}

t.test('sign-in through the API', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const d = await startDaemon(t, home, { tag });
  const call = api(d);
  secrets.add(d.info.token);
  const oauthServer = { url: stack.mcpUrl, oauth: { callbackPort: 0 } };

  t.test('a session opened while the server needs a sign-in takes it in once signed in (the loopback callback)', async (t) => {
    secrets.add('stdio-typed-secret-9x');
    t.equal((await call('PUT', srv('sdk'), { body: sdkServer({ secrets: { env: { SDK_TYPED: 'stdio-typed-secret-9x' } } }) })).status, 201);
    const put = await call('PUT', srv('secure'), { body: oauthServer });
    t.same([put.status, put.body.check], [201, { tried: true, result: 'needs_sign_in' }], 'saved, needing a sign-in');
    t.match(put.body.server, { state: 'needs_sign_in', auth: { state: 'needs_sign_in', reason: 'not_signed_in' } }, 'the DTO says so');
    t.match((await call('GET', srv('sdk'))).body, { state: 'discovered', auth: null }, 'a stdio server: discovered by its try, no auth');

    const opened = await call('POST', '/v1/sessions', { body: {} });
    t.equal(opened.status, 201);
    const s = opened.body;
    t.match(s.servers, [
      { name: 'sdk', advertised: true },
      { name: 'secure', state: 'needs_sign_in', advertised: false },
    ]);
    const stream = await follow(d, s.id);
    t.teardown(() => stream.close());
    const refused = await call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'secure/whoami' } });
    t.match(refused, { status: 409, body: { error: { code: 'ALBEDO_NEEDS_SIGN_IN', outcome: 'not_run' } } });
    t.equal(
      textOf((await call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'sdk/echo', arguments: { text: 'hi' } } })).body.result),
      'hi',
    );
    await call('GET', `/v1/sessions/${s.id}/tools`);
    await call('GET', `/v1/sessions/${s.id}/context`);

    const started = await call('PUT', login('secure'));
    t.equal(started.status, 201, JSON.stringify(started.body));
    const l = started.body;
    t.match(l, { login: 'mcp:secure', server: 'secure', state: 'pending', authorizationUrl: String, auth: null, error: null });
    const authUrl = new URL(l.authorizationUrl);
    t.equal(authUrl.origin, stack.issuer, "the URL is the authorization server's");
    t.match(authUrl.searchParams.get('redirect_uri'), /^http:\/\/127\.0\.0\.1:\d+\/callback$/, 'its redirect is the loopback callback');
    t.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
    const ttl = Date.parse(l.expiresAt) - Date.parse(l.startedAt);
    t.ok(ttl >= 10 * 60_000, `it expires ten minutes after its URL was issued (${ttl} ms after the start)`);
    const again = await call('PUT', login('secure'));
    t.same([again.status, again.body.authorizationUrl], [200, l.authorizationUrl], 'a second PUT: the sign-in already pending');
    t.match((await call('GET', login('secure'))).body, { state: 'pending' });
    t.equal((await call('GET', '/v1/status')).body.signIns, 1, 'status counts it');

    await browserStandIn(l.authorizationUrl);
    await until(async () => (await call('GET', login('secure'))).body.state !== 'pending', 60_000, 'the sign-in to complete');
    const done = await call('GET', login('secure'));
    t.match(done.body, { state: 'completed', authorizationUrl: null, auth: { state: 'signed_in', account: 'alice' }, error: null });
    collectCreds(home, stack);
    t.match((await call('GET', srv('secure'))).body, { auth: { state: 'signed_in', account: 'alice', refreshable: true } });
    t.not((await call('GET', srv('secure'))).body.state, 'needs_sign_in');

    // creds.json changed → the fingerprint moved → the session reloaded and took the server in.
    await until(
      async () => (await call('GET', `/v1/sessions/${s.id}`)).body.servers.find((x: any) => x.name === 'secure')?.advertised === true,
      90_000,
      'the session to take secure in',
    );
    await until(
      () => stream.events.some((e) => e.event === 'capabilities_changed' && e.data.includes('secure')),
      30_000,
      'capabilities_changed',
    );
    const who = await call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'secure/whoami' } });
    t.equal(who.status, 200, JSON.stringify(who.body));
    t.match(textOf(who.body.result), /^sub=alice /, "the call carries alice's token");
    collectCreds(home, stack);
    const status = (await call('GET', '/v1/status')).body;
    t.same([status.signIns, status.sessions], [0, 1]);
    t.equal(status.services.oauth.length, 1, 'the oauth service runs now');

    // Sign-out: a settings write; the session loses the server again.
    const out = await call('PATCH', srv('secure'), { body: { secrets: { oauth: null } } });
    t.same(
      [out.status, out.body.check],
      [200, { tried: true, result: 'needs_sign_in' }],
      'tried without the dropped tokens: needs a sign-in',
    );
    t.match(out.body.server, { state: 'needs_sign_in', auth: { state: 'signed_out' } });
    const rec = JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8')).mcp.secure.oauth;
    t.same([rec.state, rec.tokens, rec.account], ['signed_out', undefined, undefined], 'creds.json: no tokens, signed out');
    t.ok(rec.registrations?.length, 'the client registration is kept (it holds no user token)');
    await until(
      async () => (await call('GET', `/v1/sessions/${s.id}`)).body.servers.find((x: any) => x.name === 'secure')?.state === 'needs_sign_in',
      90_000,
      'the session to lose secure',
    );
    t.match(
      await call('POST', `/v1/sessions/${s.id}/calls`, { body: { name: 'secure/whoami' } }),
      { status: 409 },
      'its calls need a sign-in again',
    );
  });

  t.test("a pasted callback; a callback of another server's sign-in is refused; DELETE cancels", async (t) => {
    for (const n of ['one', 'two']) t.equal((await call('PUT', srv(n), { body: oauthServer })).status, 201);
    const one = (await call('PUT', login('one'))).body;
    const two = (await call('PUT', login('two'))).body;
    t.not(one.authorizationUrl, two.authorizationUrl);
    const cbTwo = (await redirectOnly(two.authorizationUrl)).callbackUrl;
    const cbOne = (await redirectOnly(one.authorizationUrl)).callbackUrl;
    secrets.add(new URL(cbTwo).searchParams.get('code')!);
    secrets.add(new URL(cbOne).searchParams.get('code')!);

    const bad = [
      ["two's callback pasted into one", cbTwo],
      ["one's callback with another state", withState(cbOne, new URL(cbTwo).searchParams.get('state')!)],
      ["one's callback with no state", withState(cbOne, '')],
      ['not a URL', 'code=abc&state=def'],
    ] as const;
    for (const [what, url] of bad) {
      const r = await call('POST', login('one', '/callback'), { body: { url } });
      t.same([r.status, r.body.error.code, r.body.error.path], [400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'url']], what);
    }
    t.match((await call('GET', login('one'))).body, { state: 'pending' }, 'one is still pending');
    t.match((await call('GET', login('two'))).body, { state: 'pending' }, 'two is still pending (nothing consumed its state)');

    const ok = await call('POST', login('two', '/callback'), { body: { url: cbTwo } });
    t.equal(ok.status, 200, JSON.stringify(ok.body));
    t.match(ok.body, { state: 'completed', auth: { state: 'signed_in', account: 'alice' } }, 'two signed in by the pasted URL');
    collectCreds(home, stack);
    const twice = await call('POST', login('two', '/callback'), { body: { url: cbTwo } });
    t.same([twice.status, twice.body.error.code], [409, 'ALBEDO_SIGN_IN_FAILED'], 'the same callback again: not pending any more');

    // The user refused at the authorization server: its redirect carries an error and this sign-in's state.
    const oneUrl = new URL(one.authorizationUrl);
    const denied =
      `${oneUrl.searchParams.get('redirect_uri')}?error=access_denied&state=${oneUrl.searchParams.get('state')}` +
      `&iss=${encodeURIComponent(stack.issuer)}`;
    t.match(await call('POST', login('one', '/callback'), { body: { url: denied } }), {
      status: 409,
      body: { error: { code: 'ALBEDO_SIGN_IN_FAILED' } },
    });
    t.match((await call('GET', login('one'))).body, { state: 'failed', error: { reason: 'denied' } }, 'GET says why');
    t.equal((await call('DELETE', login('one'))).status, 204, 'one forgotten');
    t.match(await call('GET', login('one')), { status: 404, body: { error: { code: 'ALBEDO_NOT_FOUND' } } });
    t.match(await call('POST', login('one', '/callback'), { body: { url: cbOne } }), { status: 404 }, 'its callback has nowhere to go');
    t.match(await call('DELETE', login('one')), { status: 404 });
    const creds = JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8')).mcp;
    t.notOk(creds.one.oauth.tokens, 'one never got a token');
    t.ok(creds.two.oauth.tokens, 'two did');

    // A sign-out ends a pending sign-in of its server; so does removing the server.
    t.equal((await call('PUT', login('two'))).status, 201, 'two: a new sign-in');
    t.equal((await call('PATCH', srv('two'), { body: { secrets: { oauth: null } } })).status, 200);
    t.match(await call('GET', login('two')), { status: 404 }, 'the sign-out cancelled it');
    t.equal((await call('PUT', login('one'))).status, 201);
    t.equal((await call('DELETE', srv('one'))).status, 204);
    t.match(await call('GET', login('one')), { status: 404 }, 'removing the server cancelled its sign-in');
  });

  t.test("bad requests to the sign-in routes: a 4xx with the field's path", async (t) => {
    t.equal(
      (await call('PUT', srv('fixed'), { body: { url: stack.mcpUrl, enabled: false, secrets: { bearer: 'fixed-bearer-secret-7x' } } }))
        .status,
      201,
    );
    secrets.add('fixed-bearer-secret-7x');
    const cases: Array<[string, string, string, Parameters<Daemon['call']>[2], number, string, Array<string | number>]> = [
      ['no provider prefix', 'PUT', '/v1/auth/logins/secure', {}, 400, 'ALBEDO_INVALID_ARGUMENT', ['params', 'login']],
      ['another provider', 'GET', '/v1/auth/logins/github:secure', {}, 400, 'ALBEDO_INVALID_ARGUMENT', ['params', 'login']],
      ['no such server', 'PUT', login('nowhere'), {}, 404, 'ALBEDO_NOT_FOUND', ['params', 'login']],
      ['a stdio server', 'PUT', login('sdk'), {}, 400, 'ALBEDO_INVALID_ARGUMENT', ['params', 'login']],
      ['a fixed bearer token', 'PUT', login('fixed'), {}, 400, 'ALBEDO_INVALID_ARGUMENT', ['params', 'login']],
      ['no sign-in known', 'GET', login('fixed'), {}, 404, 'ALBEDO_NOT_FOUND', ['params', 'login']],
      ['a callback without url', 'POST', login('secure', '/callback'), { body: {} }, 400, 'ALBEDO_INVALID_ARGUMENT', ['body', 'url']],
      [
        'a url that is a number',
        'POST',
        login('secure', '/callback'),
        { body: { url: 5 } },
        400,
        'ALBEDO_INVALID_ARGUMENT',
        ['body', 'url'],
      ],
      [
        'an unknown field',
        'POST',
        login('secure', '/callback'),
        { body: { url: 'http://x/', code: 'c' } },
        400,
        'ALBEDO_INVALID_ARGUMENT',
        ['body', 'code'],
      ],
    ];
    for (const [what, method, p, o, status, code, want] of cases) {
      const r = await call(method, p, o);
      t.same([r.status, r.body?.error?.code, r.body?.error?.path], [status, code, want], what);
    }
    // An authorization server that cannot be reached: the sign-in fails before any URL, and says why.
    t.equal((await call('PUT', srv('unreachable'), { body: { url: 'http://127.0.0.1:1/mcp', enabled: false } })).status, 201);
    const r = await call('PUT', login('unreachable'));
    t.match(r, { status: 502, body: { error: { code: 'ALBEDO_SIGN_IN_FAILED', outcome: 'not_run' } } });
    const failed = (await call('GET', login('unreachable'))).body;
    t.match(failed, { state: 'failed', authorizationUrl: null, error: { code: 'ALBEDO_SIGN_IN_FAILED', reason: String } });
  });

  t.test('nothing the daemon said holds a token, a code or a secret value', async (t) => {
    collectCreds(home, stack);
    said.push(...d.lines);
    t.ok(secrets.size >= 6, `secrets gathered (${secrets.size})`);
    t.ok(
      d.lines.some((l) => /signed in to secure/.test(l)),
      'the log says what happened…',
    );
    let i = 0;
    for (const s of secrets)
      t.notOk(
        said.some((x) => x.includes(s)),
        `secret ${++i} (${s.length} characters) never said`,
      );
  });
});

t.test('a pending sign-in expires (ALBEDO_SIGN_IN_TTL_MS): GET says so, a late callback is refused, no token is stored', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const d = await startDaemon(t, home, { tag, env: { ALBEDO_SIGN_IN_TTL_MS: '1500' } });
  t.equal((await d.call('PUT', srv('secure'), { body: { url: stack.mcpUrl, oauth: { callbackPort: 0 } } })).status, 201);
  const l = (await d.call('PUT', login('secure'))).body;
  t.equal(l.state, 'pending');
  t.ok(Date.parse(l.expiresAt) - Date.parse(l.startedAt) >= 1500, "its expiry is the knob's");
  const late = (await redirectOnly(l.authorizationUrl)).callbackUrl;
  await until(async () => (await d.call('GET', login('secure'))).body.state !== 'pending', 60_000, 'the sign-in to expire');
  const r = await d.call('GET', login('secure'));
  t.match(r.body, {
    state: 'failed',
    authorizationUrl: null,
    expiresAt: null,
    error: { code: 'ALBEDO_SIGN_IN_FAILED', reason: 'expired' },
  });
  const cb = await d.call('POST', login('secure', '/callback'), { body: { url: late } });
  t.same([cb.status, cb.body.error.code], [409, 'ALBEDO_SIGN_IN_FAILED'], 'the callback came too late');
  const rec = JSON.parse(readFileSync(path.join(home, 'creds.json'), 'utf8')).mcp.secure.oauth;
  t.notOk(rec.tokens, 'no token stored');
  t.equal((await d.call('GET', '/v1/status')).body.signIns, 0);
  const next = await d.call('PUT', login('secure'));
  t.same([next.status, next.body.state], [201, 'pending'], 'a new sign-in can start');
  t.not(next.body.authorizationUrl, l.authorizationUrl, 'with a new state');
  t.equal(await d.stop(), 0, 'SIGTERM with a sign-in pending: a clean stop');
  t.ok(
    d.lines.some((x) => x === 'albedo daemon: stopped'),
    'it says so',
  );
});
