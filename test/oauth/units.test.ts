// The pure OAuth pieces (challenge parsing, well-known URLs, resource and
// scope rules), the credentials store (0600, atomic, the lock), discovery's
// refusals against small hand-written servers (faults a real authorization
// server will not produce), and config validation.
import t from 'tap';
import http from 'node:http';
import { chmodSync, readFileSync, statSync, writeFileSync, existsSync, readdirSync, mkdirSync, utimesSync } from 'node:fs';
import lockfile from 'proper-lockfile';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import {
  parseWwwAuthenticate,
  authChallenge,
  authServerMetadataUrls,
  protectedResourceMetadataUrls,
  resourceCovers,
  scopeUnion,
  scopeCovers,
} from '../../protocol/oauth.ts';
import { FileCredsStore } from '../../services/oauth/store.ts';
import { discover, checkCallback, authorizationUrl, refreshDue, type Discovery } from '../../services/oauth/flow.ts';
import { parseServerConfig, resolveServer } from '../../api/resolve.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { rejection, tempHome } from '../helpers.ts';
import type { ResolvedAuth } from '../../protocol/config.ts';
import { LinkAuth } from '../../services/oauth/link-auth.ts';
import { nameOf, createAlbedo } from '../../api/albedo.ts';

t.test('WWW-Authenticate parsing', async (t) => {
  t.same(
    parseWwwAuthenticate(
      'Bearer error="invalid_token", error_description="Missing \\"Authorization\\" header", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp"',
    ),
    [
      {
        scheme: 'bearer',
        params: {
          error: 'invalid_token',
          error_description: 'Missing "Authorization" header',
          resource_metadata: 'http://x/.well-known/oauth-protected-resource/mcp',
        },
      },
    ],
  );
  t.same(
    parseWwwAuthenticate('Basic realm="a, b", DPoP algs="ES256 PS256", Bearer scope=read'),
    [
      { scheme: 'basic', params: { realm: 'a, b' } },
      { scheme: 'dpop', params: { algs: 'ES256 PS256' } },
      { scheme: 'bearer', params: { scope: 'read' } },
    ],
    'several challenges, commas inside quotes, token values',
  );
  t.same(
    parseWwwAuthenticate('Negotiate abc123==, Bearer'),
    [
      { scheme: 'negotiate', params: {} },
      { scheme: 'bearer', params: {} },
    ],
    'token68 and a bare scheme',
  );
  t.same(parseWwwAuthenticate(undefined), []);
  t.same(
    authChallenge(['Bearer scope="mcp:basic"', 'DPoP error="use_dpop_nonce", resource_metadata="u"']),
    { scheme: 'dpop', error: 'use_dpop_nonce', scope: undefined, resourceMetadata: 'u' },
    'a DPoP error challenge wins',
  );
  t.same(authChallenge('Bearer error="insufficient_scope", scope="a b"'), {
    scheme: 'bearer',
    error: 'insufficient_scope',
    scope: 'a b',
    resourceMetadata: undefined,
  });
});

t.test('well-known URLs in the spec order', async (t) => {
  t.same(authServerMetadataUrls('https://as.example.com'), [
    'https://as.example.com/.well-known/oauth-authorization-server',
    'https://as.example.com/.well-known/openid-configuration',
  ]);
  t.same(authServerMetadataUrls('https://as.example.com/tenant1'), [
    'https://as.example.com/.well-known/oauth-authorization-server/tenant1',
    'https://as.example.com/.well-known/openid-configuration/tenant1',
    'https://as.example.com/tenant1/.well-known/openid-configuration',
  ]);
  t.same(protectedResourceMetadataUrls('https://mcp.example.com/api/mcp'), [
    'https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp',
    'https://mcp.example.com/.well-known/oauth-protected-resource',
  ]);
  t.same(protectedResourceMetadataUrls('https://mcp.example.com'), ['https://mcp.example.com/.well-known/oauth-protected-resource']);
});

t.test('resource and scope rules', async (t) => {
  t.ok(resourceCovers('https://m.example.com/mcp', 'https://m.example.com/mcp'));
  t.ok(resourceCovers('https://m.example.com', 'https://m.example.com/mcp'), 'an origin covers its paths');
  t.ok(resourceCovers('https://m.example.com/api', 'https://m.example.com/api/mcp'));
  t.notOk(resourceCovers('https://m.example.com/ap', 'https://m.example.com/api/mcp'), 'prefixes end on a segment');
  t.notOk(resourceCovers('https://evil.example.com/mcp', 'https://m.example.com/mcp'), 'another origin');
  t.notOk(resourceCovers('http://m.example.com/mcp', 'https://m.example.com/mcp'), 'another scheme');
  t.notOk(resourceCovers('https://m.example.com/mcp#x', 'https://m.example.com/mcp'), 'a fragment');
  t.equal(scopeUnion('a b', undefined, 'b c'), 'a b c');
  t.equal(scopeUnion(undefined, ''), undefined);
  t.ok(scopeCovers('a b c', 'c a'));
  t.notOk(scopeCovers('a', 'a b'));
  const now = 1_000_000;
  t.ok(refreshDue({ obtainedAt: now - 3_600_000, expiresAt: now + 30_000 }, now), 'within a minute of expiry');
  t.notOk(refreshDue({ obtainedAt: now, expiresAt: now + 3_600_000 }, now));
  t.notOk(refreshDue({ obtainedAt: now, expiresAt: now + 30_000 }, now), 'a 30 s token is not refreshed at once (half its life)');
  t.ok(refreshDue({ obtainedAt: now - 16_000, expiresAt: now + 14_000 }, now));
  t.notOk(refreshDue({ obtainedAt: now }, now), 'no expiry, no refresh');
});

t.test('creds.json: 0600, atomic, other content kept, no secret in errors', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  writeFileSync(file, JSON.stringify({ other: { keep: 'me' }, mcp: { x: { bearer: 'kept' } } }));
  chmodSync(file, 0o644);
  const store = new FileCredsStore(file);
  await store.update('x', 'https://m/mcp', () => ({
    record: {
      url: 'ignored',
      state: 'signed_in',
      updatedAt: 0,
      tokens: { accessToken: 'AT-secret', tokenType: 'Bearer', issuer: 'https://as', obtainedAt: 1 },
    },
    value: undefined,
  }));
  t.equal(statSync(file).mode & 0o777, 0o600, 'a 0644 file becomes 0600 on write');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  t.same(doc.other, { keep: 'me' }, 'unrelated content kept');
  t.equal(doc.mcp.x.bearer, 'kept');
  t.equal(doc.mcp.x.oauth.url, 'https://m/mcp', 'the record carries the server URL it belongs to');
  t.equal((await store.get('x', 'https://m/mcp'))?.tokens?.accessToken, 'AT-secret');
  t.equal(await store.get('x', 'https://other/mcp'), undefined, 'a record for another URL is never handed out');
  t.same(
    readdirSync(home).filter((f) => f.includes('.tmp')),
    [],
    'no temporary file left',
  );
  t.notOk(existsSync(`${file}.lock`), 'the lock is released');

  // A callback that throws writes nothing.
  const before = readFileSync(file, 'utf8');
  await t.rejects(
    store.update('x', 'https://m/mcp', () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  t.equal(readFileSync(file, 'utf8'), before, 'a failed update changes nothing');
  t.notOk(existsSync(`${file}.lock`));

  // A stale lock (its holder stopped refreshing it a minute ago) is broken; a live one is waited for.
  mkdirSync(`${file}.lock`);
  const old = new Date(Date.now() - 60_000);
  utimesSync(`${file}.lock`, old, old);
  await store.update('x', 'https://m/mcp', (r) => ({ record: { ...r!, reason: 'after-stale-lock' }, value: undefined }));
  t.equal((await store.get('x', 'https://m/mcp'))?.reason, 'after-stale-lock', "a dead holder's lock was broken");
  const release = await lockfile.lock(file, { lockfilePath: `${file}.lock`, realpath: false, stale: 30_000 });
  let done = false;
  const waiting = store
    .update('x', 'https://m/mcp', (r) => ({ record: { ...r!, reason: 'after-live-lock' }, value: undefined }))
    .then(() => {
      done = true;
    });
  await new Promise((r) => setTimeout(r, 400));
  t.notOk(done, "a live holder's lock is waited for");
  await release();
  await waiting;
  t.equal((await store.get('x', 'https://m/mcp'))?.reason, 'after-live-lock');

  writeFileSync(file, '{"mcp": {"x": {"oauth": {"tokens": {"accessToken": "AT-secret"');
  const err = await rejection(store.get('x', 'https://m/mcp'));
  t.equal(err.code, 'ALBEDO_INVALID_CONFIG');
  t.notMatch(err.message, /AT-secret/, 'a broken file is not quoted');
});

/** A hand-written authorization stack whose documents a test sets. */
async function fakeStack(
  t: { teardown(fn: () => unknown): void },
  docs: (base: string) => Record<string, unknown>,
): Promise<{ base: string; hits: string[] }> {
  const hits: string[] = [];
  let base = '';
  const srv = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const body = docs(base)[req.url ?? ''];
    if (body === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  return { base, hits };
}

const auth = (): ResolvedAuth => ({ name: 's', credsPath: null, oauth: { grant: 'authorization_code', dpop: 'auto', callbackPort: 0 } });

t.test('discovery refuses what it must, before any registration or token request', async (t) => {
  const asMeta = (b: string, extra: Record<string, unknown> = {}) => ({
    issuer: b,
    authorization_endpoint: `${b}/authorize`,
    token_endpoint: `${b}/token`,
    registration_endpoint: `${b}/register`,
    code_challenge_methods_supported: ['S256'],
    ...extra,
  });
  const reason = async (p: Promise<unknown>): Promise<string> => {
    const e = await rejection(p);
    t.equal(e.code, 'ALBEDO_SIGN_IN_FAILED', e.message);
    return (e.data as { reason: string }).reason;
  };

  const mismatch = await fakeStack(t, (b) => ({
    '/.well-known/oauth-protected-resource/mcp': { resource: `${b}/mcp`, authorization_servers: [b] },
    '/.well-known/oauth-authorization-server': asMeta('https://attacker.example.com'),
    '/.well-known/openid-configuration': asMeta('https://attacker.example.com'),
  }));
  t.equal(
    await reason(discover({ auth: auth(), serverUrl: `${mismatch.base}/mcp`, store: undefined as never })),
    'issuer_mismatch',
    'metadata naming another issuer is not used',
  );
  t.notOk(
    mismatch.hits.some((h) => /register|authorize|token/.test(h)),
    'nothing of the mismatched metadata was used',
  );

  const evil = await fakeStack(t, (b) => ({
    '/.well-known/oauth-protected-resource/mcp': { resource: 'https://evil.example.com/mcp', authorization_servers: [b] },
  }));
  t.equal(await reason(discover({ auth: auth(), serverUrl: `${evil.base}/mcp`, store: undefined as never })), 'resource_mismatch');

  const good = await fakeStack(t, (b) => ({
    '/.well-known/oauth-protected-resource/mcp': { resource: `${b}/mcp`, authorization_servers: [b], scopes_supported: ['r'] },
    '/.well-known/oauth-authorization-server': asMeta(b, { code_challenge_methods_supported: ['plain'] }),
  }));
  const d = await discover({ auth: auth(), serverUrl: `${good.base}/mcp`, store: undefined as never });
  t.equal(d.resource, `${good.base}/mcp`, 'the PRM resource, verbatim');
  t.equal(
    await reason(
      authorizationUrl(
        d,
        { issuer: d.issuer, clientId: 'c', authMethod: 'none', kind: 'dcr', registeredAt: 0 },
        'http://127.0.0.1:1/callback',
        'r',
      ),
    ),
    'no_s256',
    'no S256, no sign-in',
  );

  // An https MCP server: plain-http metadata or endpoints are refused before they are fetched.
  const hitsBefore = good.hits.length;
  t.equal(
    await reason(
      discover(
        { auth: auth(), serverUrl: 'https://mcp.example.test/mcp', store: undefined as never },
        `${good.base}/.well-known/oauth-protected-resource/mcp`,
      ),
    ),
    'insecure_endpoint',
  );
  t.equal(good.hits.length, hitsBefore, 'the http metadata URL was not fetched for the https server');
});

t.test('callback checks: state, iss table, error', async (t) => {
  const d = {
    issuer: 'https://as.example.com',
    as: { issuer: 'https://as.example.com', authorization_response_iss_parameter_supported: true },
    defaults: false,
  } as Discovery;
  const p = { url: '', state: 'S', verifier: 'v', redirectUri: 'r', scope: undefined };
  const check = (q: string, dd: Discovery = d): string | undefined => {
    try {
      checkCallback(dd, p, new URLSearchParams(q));
      return undefined;
    } catch (err) {
      return AlbedoError.is(err) ? (err.data as { reason: string }).reason : String(err);
    }
  };
  t.equal(check('code=c&state=S&iss=https://as.example.com'), undefined, 'advertised and present: compared, equal');
  t.equal(check('code=c&state=S'), 'iss_missing', 'advertised and absent: refused');
  t.equal(check('code=c&state=S&iss=https://as.example.com/'), 'iss_mismatch', 'no normalisation');
  const quiet = { ...d, as: { issuer: d.issuer } } as Discovery;
  t.equal(check('code=c&state=S', quiet), undefined, 'not advertised and absent: proceed');
  t.equal(check('code=c&state=S&iss=https://evil.example.com', quiet), 'iss_mismatch', 'not advertised but present: compared');
  t.equal(check('code=c&state=T&iss=https://as.example.com'), 'state_mismatch');
  t.equal(check('error=access_denied&state=S&iss=https://as.example.com'), 'denied');
  t.equal(check('state=S&iss=https://as.example.com'), 'no_code');
});

t.test('oauth config: specific errors, secrets resolved and never echoed', async (t) => {
  const bad = (cfg: unknown, pattern: RegExp): void => {
    try {
      parseServerConfig(cfg);
      t.fail(`accepted ${JSON.stringify(cfg)}`);
    } catch (err) {
      t.equal((err as AlbedoError).code, 'ALBEDO_INVALID_CONFIG');
      t.match((err as Error).message, pattern);
    }
  };
  bad({ url: 'https://m/mcp', oauth: { grant: 'client_credentials' } }, /oauth\.clientId: client_credentials needs a clientId/);
  bad({ url: 'https://m/mcp', oauth: { grant: 'jwt_bearer' } }, /oauth\.assertion/);
  bad({ url: 'https://m/mcp', oauth: { clientMetadataUrl: 'http://insecure/doc.json' } }, /clientMetadataUrl: must be an https URL/);
  bad({ url: 'https://m/mcp', oauth: { grant: 'magic' } }, /oauth\.grant/);
  bad({ url: 'https://m/mcp', oauth: {}, bearerTokenEnvVar: 'X' }, /either oauth or a fixed Authorization/);
  bad({ url: 'https://m/mcp', oauth: { clientSecret: 's' } }, /needs its clientId/);
  const parsed = parseServerConfig({ url: 'https://m/mcp', oauth: { clientId: 'c', clientSecret: { env: 'ALBEDO_TEST_OAUTH_SECRET' } } });
  t.throws(
    () => resolveServer(parsed, {}, process.cwd(), { name: 'm', credsPath: null }),
    /oauth\.clientSecret names the environment variable ALBEDO_TEST_OAUTH_SECRET/,
  );
  const r = resolveServer(parsed, { ALBEDO_TEST_OAUTH_SECRET: 'shh' }, process.cwd(), { name: 'm', credsPath: null });
  t.equal(r.type === 'http' && r.auth?.oauth.clientSecret, 'shh');
  const fixed = resolveServer(parseServerConfig({ url: 'https://m/mcp', headers: { Authorization: 'Bearer x' } }), {}, process.cwd(), {
    name: 'm',
    credsPath: null,
  });
  t.equal(fixed.type === 'http' && fixed.auth, null, 'a fixed Authorization header means no OAuth');
});

t.test('a resource metadata outage during a refresh keeps the tokens (no fallback, no sign-out)', async (t) => {
  const home = tempHome(t);
  let prmStatus = 503;
  const st = await fakeStack(t, (b) => ({}));
  // Serve the PRM with a status the test sets.
  const srv = http.createServer((req, res) => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res
        .writeHead(prmStatus, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: `${base}/mcp`, authorization_servers: [st.base] }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  const file = path.join(home, 'creds.json');
  const a: ResolvedAuth = { name: 'm', credsPath: file, oauth: { grant: 'authorization_code', dpop: 'auto', callbackPort: 0 } };
  const store = new FileCredsStore(file);
  const now = Date.now();
  await store.update('m', `${base}/mcp`, () => ({
    record: {
      url: `${base}/mcp`,
      state: 'signed_in',
      updatedAt: 0,
      issuer: st.base,
      client: { issuer: st.base, clientId: 'c', authMethod: 'none', kind: 'dcr', registeredAt: now },
      tokens: {
        accessToken: 'AT',
        refreshToken: 'RT',
        tokenType: 'Bearer',
        issuer: st.base,
        obtainedAt: now - 3_600_000,
        expiresAt: now + 10_000,
        resource: `${base}/mcp`,
      },
    },
    value: undefined,
  }));
  const la = new LinkAuth(a, `${base}/mcp`);
  const h = await la.headers('POST', new URL(`${base}/mcp`));
  t.equal(h.headers.authorization, 'Bearer AT', 'the current token is still sent');
  const rec = await store.get('m', `${base}/mcp`);
  t.equal(rec?.state, 'signed_in', 'still signed in');
  t.equal(rec?.tokens?.refreshToken, 'RT', 'the refresh token is kept for the next try');
  t.notOk(
    st.hits.some((x) => /register|token/.test(x)),
    'nothing was sent to any token or registration endpoint',
  );
});

t.test('default names keep two servers of one host apart', async (t) => {
  t.equal(nameOf(parseServerConfig({ url: 'https://h.example.com/a' }), undefined), 'h.example.com/a');
  t.equal(nameOf(parseServerConfig({ url: 'https://h.example.com/b/' }), undefined), 'h.example.com/b');
  t.equal(nameOf(parseServerConfig({ url: 'https://h.example.com' }), undefined), 'h.example.com');
  t.equal(nameOf(parseServerConfig({ url: 'https://h.example.com/a' }), 'mine'), 'mine');
});

t.test('signIn refuses a mismatched issuer and plain-http metadata for an https server; nothing is stored', async (t) => {
  const home = tempHome(t);
  const albedo = await createAlbedo({
    home,
    transportWorkers: 1,
    authorize: () => {
      throw new Error('the browser must not be opened');
    },
  });
  t.teardown(() => albedo.close());
  const mismatch = await fakeStack(t, (b) => ({
    '/.well-known/oauth-protected-resource/mcp': { resource: `${b}/mcp`, authorization_servers: [b] },
    '/.well-known/oauth-authorization-server': {
      issuer: 'https://attacker.example.com',
      authorization_endpoint: `${b}/authorize`,
      token_endpoint: `${b}/token`,
      registration_endpoint: `${b}/register`,
      code_challenge_methods_supported: ['S256'],
    },
  }));
  const e1 = await rejection(albedo.signIn({ url: `${mismatch.base}/mcp` }, { name: 'mm' }));
  t.equal(e1.code, 'ALBEDO_SIGN_IN_FAILED');
  t.equal((e1.data as { reason: string }).reason, 'issuer_mismatch');
  t.notOk(
    mismatch.hits.some((h) => /register|authorize|token/.test(h)),
    'no endpoint of the mismatched metadata was used',
  );
  t.not((await albedo.authStatus({ url: `${mismatch.base}/mcp` }, { name: 'mm' })).state, 'signed_in');

  // An https server whose last challenge named plain-http resource metadata.
  const url = 'https://127.0.0.1:9/mcp';
  await new FileCredsStore(path.join(home, 'creds.json')).update('sec', url, () => ({
    record: {
      url,
      state: 'needs_sign_in',
      reason: 'not_signed_in',
      updatedAt: 0,
      challenge: { resourceMetadata: `${mismatch.base}/.well-known/oauth-protected-resource/mcp`, at: 0 },
    },
    value: undefined,
  }));
  const hits = mismatch.hits.length;
  const e2 = await rejection(albedo.signIn({ url }, { name: 'sec' }));
  t.equal((e2.data as { reason: string }).reason, 'insecure_endpoint', e2.message);
  t.equal(mismatch.hits.length, hits, 'the http metadata was not even fetched');
  const st = await albedo.authStatus({ url }, { name: 'sec' });
  t.equal(st.state, 'needs_sign_in', 'nothing stored: still needs a sign-in');
});

t.test('a refresh uses the authorization server the sign-in found: no metadata needed (custom PRM location)', async (t) => {
  const home = tempHome(t);
  const as = await fakeStack(t, () => ({
    '/token': { access_token: 'AT2', token_type: 'Bearer', expires_in: 3600, refresh_token: 'RT2', scope: 'r' },
  }));
  const url = 'http://127.0.0.1:9/mcp';
  const file = path.join(home, 'creds.json');
  const now = Date.now();
  await new FileCredsStore(file).update('m', url, () => ({
    record: {
      url,
      state: 'signed_in',
      updatedAt: 0,
      issuer: as.base,
      authServer: {
        issuer: as.base,
        token_endpoint: `${as.base}/token`,
        authorization_endpoint: `${as.base}/authorize`,
        code_challenge_methods_supported: ['S256'],
      },
      client: { issuer: as.base, clientId: 'c', authMethod: 'none', kind: 'dcr', registeredAt: now },
      tokens: {
        accessToken: 'AT1',
        refreshToken: 'RT1',
        tokenType: 'Bearer',
        issuer: as.base,
        obtainedAt: now - 3_600_000,
        expiresAt: now + 5_000,
        resource: url,
      },
    },
    value: undefined,
  }));
  const la = new LinkAuth({ name: 'm', credsPath: file, oauth: { grant: 'authorization_code', dpop: 'auto', callbackPort: 0 } }, url);
  const h = await la.headers('POST', new URL(url));
  t.equal(h.headers.authorization, 'Bearer AT2', 'refreshed before the request');
  t.same(as.hits, ['POST /token'], 'one token request and no discovery at all');
  const rec = await new FileCredsStore(file).get('m', url);
  t.equal(rec?.tokens?.refreshToken, 'RT2', 'the rotated refresh token is stored');
});
