// OAuth responses are bounded (issue 10, item 5): discovery (protected
// resource and authorization server metadata), registration, the token
// endpoint (code, refresh, client credentials) and the ID-JAG exchange each
// read at most 1 MiB. A larger answer — one that declares its length, or a
// chunked one that never ends — fails the sign-in or refresh with
// ALBEDO_SIGN_IN_FAILED `response_too_large` and changes nothing stored; the
// endless one is cut off (the server sees the client go away long before it
// could finish), so memory stays bounded. A hand-written server, because no
// real authorization server sends such answers.
import t from 'tap';
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { discover, OAUTH_MAX_RESPONSE_BYTES, type FlowContext } from '../../services/oauth/flow.ts';
import { signIn } from '../../services/oauth/sign-in.ts';
import { LinkAuth } from '../../services/oauth/link-auth.ts';
import { FileCredsStore, type OAuthRecord } from '../../services/oauth/store.ts';
import type { ResolvedAuth, ResolvedOAuth } from '../../protocol/config.ts';
import { rejection, tempHome } from '../helpers.ts';

t.setTimeout(120_000);

const MiB = 1024 * 1024;
/** What an endless answer would send at most (the code before the bound read it all; more would only make that slower). */
const ENDLESS_BYTES = 32 * MiB;

type Route = { json: unknown; status?: number } | 'declared' | 'endless';
interface Stream {
  path: string;
  sent: number;
  finished: boolean;
  closed: Promise<void>;
}
interface Hostile {
  base: string;
  hits: string[];
  streams: Stream[];
}

/**
 * A loopback server whose answers a test sets per path: JSON, a body over the
 * bound with its Content-Length, or a chunked body (no length) that goes on
 * until the client leaves or ENDLESS_BYTES are out, with backpressure.
 */
async function hostile(t: Tap, routes: (base: string) => Record<string, Route>): Promise<Hostile> {
  const out: Hostile = { base: '', hits: [], streams: [] };
  const srv = http.createServer((req, res) => {
    res.on('error', () => {});
    req.resume();
    req.on('end', () => {
      const p = (req.url ?? '').split('?')[0]!;
      out.hits.push(`${req.method} ${p}`);
      const r = routes(out.base)[p];
      if (r === undefined) return void res.writeHead(404).end();
      if (r === 'declared') {
        const size = 2 * MiB;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(size) });
        res.end(Buffer.alloc(size, 'a'));
        return;
      }
      if (r === 'endless') {
        let closed!: () => void;
        const s: Stream = { path: p, sent: 0, finished: false, closed: new Promise((c) => (closed = c)) };
        out.streams.push(s);
        res.on('close', () => closed());
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"access_token":"');
        const chunk = Buffer.alloc(64 * 1024, 'a');
        const pump = (): void => {
          while (s.sent < ENDLESS_BYTES) {
            if (res.destroyed) return;
            s.sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          s.finished = true;
          res.end('"}');
        };
        pump();
        return;
      }
      res.writeHead(r.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(r.json));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  out.base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  return out;
}
type Tap = { teardown(fn: () => unknown): void };

const prm = (b: string): Route => ({ json: { resource: `${b}/mcp`, authorization_servers: [b] } });
const asMeta = (b: string, extra: Record<string, unknown> = {}): Route => ({
  json: {
    issuer: b,
    authorization_endpoint: `${b}/authorize`,
    token_endpoint: `${b}/token`,
    registration_endpoint: `${b}/register`,
    code_challenge_methods_supported: ['S256'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    ...extra,
  },
});
const stack = (b: string, over: Record<string, Route>): Record<string, Route> => ({
  '/.well-known/oauth-protected-resource/mcp': prm(b),
  '/.well-known/oauth-authorization-server': asMeta(b),
  ...over,
});

function authOf(file: string, oauth: Partial<ResolvedOAuth> = {}): ResolvedAuth {
  return { name: 'm', credsPath: file, oauth: { grant: 'authorization_code', dpop: false, callbackPort: 0, ...oauth } };
}

/** The failure `p` ends with, as code, reason and outcome. */
async function failure(p: Promise<unknown>): Promise<{ code: string; reason: unknown; outcome: unknown }> {
  const err = await rejection(p);
  return { code: err.code, reason: (err.data as { reason?: string } | undefined)?.reason, outcome: err.outcome };
}
const TOO_LARGE = { code: 'ALBEDO_SIGN_IN_FAILED', reason: 'response_too_large', outcome: 'not_run' };

/** The pasted callback for an authorization URL: a code and the state it carries, as the browser would bring back. */
const pasteCallback = async (url: string): Promise<string> => {
  const u = new URL(url);
  return `${u.searchParams.get('redirect_uri')}?code=the-code&state=${encodeURIComponent(u.searchParams.get('state')!)}`;
};

t.test('discovery: resource and authorization server metadata over the bound', async (t) => {
  const endless = await hostile(t, (b) => stack(b, { '/.well-known/oauth-protected-resource/mcp': 'endless' }));
  const ctx = (base: string): FlowContext => ({ auth: authOf(''), serverUrl: `${base}/mcp`, store: undefined as never });
  t.same(await failure(discover(ctx(endless.base))), TOO_LARGE, 'an endless chunked resource metadata document');
  await endless.streams[0]!.closed;
  t.notOk(
    endless.streams[0]!.finished,
    `the endless answer was cut off: the client left after ${endless.streams[0]!.sent} bytes had been written`,
  );
  t.notOk(
    endless.hits.some((h) => h.includes('oauth-authorization-server')),
    'discovery stopped there',
  );

  const declared = await hostile(t, (b) => stack(b, { '/.well-known/oauth-authorization-server': 'declared' }));
  t.same(await failure(discover(ctx(declared.base))), TOO_LARGE, 'authorization server metadata with a 2 MiB Content-Length');
  t.notOk(
    declared.hits.some((h) => h.includes('openid-configuration')),
    'not taken for "no metadata here"',
  );

  // The bound is not tight: a large but legal document (900 KiB of extra fields) is read.
  const padded = await hostile(t, (b) =>
    stack(b, { '/.well-known/oauth-authorization-server': asMeta(b, { padding: 'p'.repeat(900 * 1024) }) }),
  );
  t.ok(OAUTH_MAX_RESPONSE_BYTES > 900 * 1024);
  t.equal((await discover(ctx(padded.base))).issuer, padded.base, 'a 900 KiB metadata document is within the bound');
});

t.test('sign-in: registration, code exchange, client credentials, ID-JAG over the bound store nothing', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const store = new FileCredsStore(file);
  const run = (base: string, oauth: Partial<ResolvedOAuth>): Promise<unknown> =>
    signIn({ auth: authOf(file, oauth), serverUrl: `${base}/mcp`, store }, { open: pasteCallback, timeoutMs: 60_000 });

  const dcr = await hostile(t, (b) => stack(b, { '/register': 'endless' }));
  t.same(await failure(run(dcr.base, {})), TOO_LARGE, 'an endless registration answer');
  await dcr.streams[0]!.closed;
  t.notOk(dcr.streams[0]!.finished, 'the registration answer was cut off');
  t.notOk(
    dcr.hits.some((h) => h.includes('/token')),
    'no token request followed',
  );

  const code = await hostile(t, (b) => stack(b, { '/token': 'endless' }));
  t.same(await failure(run(code.base, { clientId: 'configured' })), TOO_LARGE, 'an endless answer to the authorization code');
  await code.streams[0]!.closed;
  t.notOk(code.streams[0]!.finished, 'the token answer was cut off');
  t.ok(code.hits.includes('POST /token'), 'the code did reach the token endpoint');

  const cc = await hostile(t, (b) => stack(b, { '/token': 'declared' }));
  const ccOauth: Partial<ResolvedOAuth> = { grant: 'client_credentials', clientId: 'svc', clientSecret: 'svc-secret' };
  t.same(await failure(run(cc.base, ccOauth)), TOO_LARGE, 'a 2 MiB client credentials answer');

  const jag = await hostile(t, (b) =>
    stack(b, { '/idp/token': 'endless', '/token': { json: { access_token: 'AT', token_type: 'Bearer' } } }),
  );
  const idp = { tokenEndpoint: `${jag.base}/idp/token`, idToken: 'the-id-token' };
  t.same(await failure(run(jag.base, { grant: 'token_exchange', clientId: 'ent', idp })), TOO_LARGE, 'an endless ID-JAG answer');
  await jag.streams[0]!.closed;
  t.notOk(jag.streams[0]!.finished, "the identity provider's answer was cut off");
  t.notOk(jag.hits.includes('POST /token'), 'nothing was presented to the authorization server');

  t.notOk(existsSync(file), 'nothing was ever stored');
});

t.test('refresh and non-interactive renewal on the request path: over the bound, nothing stored changes', async (t) => {
  const home = tempHome(t);
  const file = path.join(home, 'creds.json');
  const as = await hostile(t, (b) => stack(b, { '/token': 'endless' }));
  const url = `${as.base}/mcp`;
  const now = Date.now();
  const record: OAuthRecord = {
    url,
    state: 'signed_in',
    updatedAt: 0,
    issuer: as.base,
    authServer: (asMeta(as.base) as { json: Record<string, unknown> }).json,
    client: { issuer: as.base, clientId: 'c', authMethod: 'none', kind: 'dcr', registeredAt: now },
    tokens: {
      accessToken: 'AT0',
      refreshToken: 'RT0',
      tokenType: 'Bearer',
      issuer: as.base,
      obtainedAt: now - 3_600_000,
      expiresAt: now + 5_000,
      resource: url,
    },
  };
  await new FileCredsStore(file).update('m', url, () => ({ record, value: undefined }));
  const before = readFileSync(file, 'utf8');

  const la = new LinkAuth(authOf(file), url);
  const h = await la.headers('POST', new URL(url));
  t.equal(h.headers.authorization, 'Bearer AT0', 'a refresh that failed this way leaves the current token in use');
  await as.streams[0]!.closed;
  t.notOk(as.streams[0]!.finished, 'the refresh answer was cut off');
  t.equal(readFileSync(file, 'utf8'), before, 'the record is unchanged after the refresh before a request');

  const challenge = {
    status: 401,
    wwwAuthenticate: 'Bearer error="invalid_token"',
    dpopNonce: undefined,
    sentToken: 'AT0',
    request: { renewed: false },
  };
  const refused = la.onChallenge(challenge, 0);
  t.same(await failure(refused), TOO_LARGE, 'a refresh after a 401');
  t.equal(readFileSync(file, 'utf8'), before, 'the record is unchanged after the refresh for a 401');

  // Client credentials renewed on the request path (no user): the same bound, and the record is not marked needs_sign_in.
  const cc = await hostile(t, (b) => stack(b, { '/token': 'declared' }));
  const ccUrl = `${cc.base}/mcp`;
  const ccAuth = authOf(file, { grant: 'client_credentials', clientId: 'svc', clientSecret: 'svc-secret' });
  const noToken = { status: 401, wwwAuthenticate: 'Bearer', dpopNonce: undefined, sentToken: undefined, request: { renewed: false } };
  const grant = new LinkAuth(ccAuth, ccUrl).onChallenge(noToken, 0);
  t.same(await failure(grant), TOO_LARGE, 'a client credentials grant after a 401');
  t.ok(cc.hits.includes('POST /token'), 'the grant was tried');
  t.equal(readFileSync(file, 'utf8'), before, 'nothing was recorded for it');
});
