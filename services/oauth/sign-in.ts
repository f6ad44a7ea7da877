/**
 * One sign-in: discovery, client, the authorization-code flow with PKCE and
 * state through a loopback callback (127.0.0.1:33418/callback, an ephemeral
 * port when busy) raced with a pasted callback URL, the token exchange, and
 * the record in creds.json. Non-interactive grants get their token here too.
 * Nothing is stored unless every check passed (a client registration is
 * kept as soon as it exists: it is reusable and holds no user token).
 */
import { createServer, type Server } from 'node:http';
import { fetch as undiciFetch } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import { authChallenge } from '../../protocol/oauth.ts';
import { MODERN_VERSION } from '../../protocol/versions.ts';
import {
  authorizationUrl,
  checkCallback,
  discover,
  dpopKeyFrom,
  exchangeCode,
  newDpopKey,
  nonInteractiveGrant,
  resolveClient,
  signInFailed,
  wantsDpop,
  chooseScope,
  OAUTH_HTTP_TIMEOUT_MS,
  type FlowContext,
  type DpopKey,
  type Discovery,
} from './flow.ts';
import type { OAuthRecord, ClientRecord } from './store.ts';
import type { AuthStatus } from '../../protocol/oauth.ts';

export type { AuthStatus } from '../../protocol/oauth.ts';

/** What a record says, never a token or secret. */
export function statusOf(server: string, url: string, rec: OAuthRecord | undefined): AuthStatus {
  if (!rec) return { server, url, state: 'none' };
  const s: AuthStatus = { server, url, state: rec.state };
  if (rec.account) s.account = rec.account;
  if (rec.tokens?.expiresAt) s.expires_at = new Date(rec.tokens.expiresAt).toISOString();
  if (rec.tokens?.scope) s.scope = rec.tokens.scope;
  if (rec.stepUp) s.step_up = rec.stepUp;
  if (rec.reason) s.reason = rec.reason;
  if (rec.issuer) s.issuer = rec.issuer;
  if (rec.client) s.client = { id: rec.client.clientId, kind: rec.client.kind, issuer: rec.client.issuer };
  if (rec.tokens) {
    s.token_type = rec.tokens.tokenType;
    s.refreshable = Boolean(rec.tokens.refreshToken);
  }
  return s;
}

export interface SignInOptions {
  /** Shows the user the authorization URL (opens a browser); may resolve with a pasted callback URL. */
  open(url: string): Promise<string | void | undefined>;
  /** How long the user has to finish (default 5 minutes): then the state expires. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const DEFAULT_SIGN_IN_MS = 5 * 60_000;

/**
 * Learns the server's challenge with an unauthenticated request (its
 * resource_metadata and scope). A server that does not answer 401 gives none.
 */
async function probeChallenge(serverUrl: string): Promise<{ resourceMetadata?: string; scope?: string; scheme?: string } | undefined> {
  try {
    const res = await undiciFetch(serverUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': 'server/discover',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'server/discover',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
    });
    await res.body?.cancel().catch(() => {});
    if (res.status !== 401 && res.status !== 403) return undefined;
    const c = authChallenge(res.headers.get('www-authenticate') ?? undefined);
    return c ? { resourceMetadata: c.resourceMetadata, scope: c.scope, scheme: c.scheme } : {};
  } catch {
    return undefined;
  }
}

/** Signs in to one server; returns its status. */
export async function signIn(ctx: FlowContext, opts: SignInOptions): Promise<AuthStatus> {
  const { auth, serverUrl, store } = ctx;
  const rec = await store.get(auth.name, serverUrl);
  let challenge = rec?.challenge ?? (await probeChallenge(serverUrl));
  let d: Discovery;
  try {
    d = await discover(ctx, challenge?.resourceMetadata);
  } catch (err) {
    // A remembered challenge can be out of date (the metadata moved): ask the server afresh once.
    const reason = AlbedoError.is(err) ? (err.data as { reason?: string } | undefined)?.reason : undefined;
    if (!rec?.challenge || reason !== 'no_metadata') throw err;
    challenge = await probeChallenge(serverUrl);
    d = await discover(ctx, challenge?.resourceMetadata);
  }
  const learned = { issuer: d.issuer, authServer: d.defaults ? undefined : (d.as as Record<string, unknown>), resourceMetadata: d.prmUrl };
  const dpopJwk = wantsDpop(ctx, d, challenge?.scheme) ? (rec?.dpopKey ?? (await newDpopKey()).jwk) : undefined;
  const dpop: DpopKey | undefined = dpopJwk ? await dpopKeyFrom(dpopJwk) : undefined;

  if (auth.oauth.grant !== 'authorization_code') {
    const scope = rec?.stepUp ?? challenge?.scope ?? auth.oauth.scope;
    const { tokens, client } = await nonInteractiveGrant(ctx, d, scope, dpop);
    await store.update(auth.name, serverUrl, (cur) => ({
      record: {
        ...(cur ?? { url: serverUrl, updatedAt: 0 }),
        state: 'signed_in',
        reason: undefined,
        stepUp: undefined,
        challenge: undefined,
        ...learned,
        client,
        tokens,
        dpopKey: dpopJwk,
      },
      value: undefined,
    }));
    return statusOf(auth.name, serverUrl, await store.get(auth.name, serverUrl));
  }

  let pendingState: string | undefined;
  const listener = await loopback(auth.oauth.callbackPort, () => pendingState);
  try {
    const client = await resolveClient(ctx, d, rec, listener.redirectUri);
    if (client.kind === 'dcr') {
      // Kept at once (a failed sign-in must not register again next time), beside the client the
      // current tokens belong to, which their refreshes keep using until this sign-in succeeds.
      await store.update(auth.name, serverUrl, (cur) => ({
        record: {
          ...(cur ?? { url: serverUrl, state: 'needs_sign_in', reason: 'not_signed_in', updatedAt: 0 }),
          registrations: remember(cur?.registrations, client),
        },
        value: undefined,
      }));
    }
    const scope = chooseScope(d, rec, auth.oauth.scope, challenge?.scope);
    const pending = await authorizationUrl(d, client, listener.redirectUri, scope);
    pendingState = pending.state;
    const timeoutMs = opts.timeoutMs ?? DEFAULT_SIGN_IN_MS;
    const callback = await new Promise<URLSearchParams>((resolve, reject) => {
      const expired = (): AlbedoError =>
        signInFailed(
          'expired',
          `the sign-in to ${auth.name} was not completed within ${Math.round(timeoutMs / 1000)} s; its state has expired`,
        );
      const timer = setTimeout(() => reject(expired()), timeoutMs);
      const onAbort = (): void =>
        reject(new AlbedoError('ALBEDO_DEADLINE', `the sign-in to ${auth.name} was cancelled`, { outcome: 'not_run' }));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      listener.callback.then(
        (p) => {
          done();
          resolve(p);
        },
        (e) => {
          done();
          reject(e);
        },
      );
      void Promise.resolve()
        .then(() => opts.open(pending.url))
        .then(
          (pasted) => {
            if (typeof pasted !== 'string' || !pasted.trim()) return;
            let u: URL;
            try {
              u = new URL(pasted.trim());
            } catch {
              done();
              reject(signInFailed('no_code', 'the pasted callback is not a URL'));
              return;
            }
            done();
            resolve(u.searchParams);
          },
          (e) => {
            done();
            reject(e);
          },
        );
    });
    checkCallback(d, pending, callback);
    const tokens = await exchangeCode(ctx, d, client, callback, pending.redirectUri, pending.verifier, pending.state, dpop, scope);
    await store.update(auth.name, serverUrl, (cur) => ({
      record: {
        ...(cur ?? { url: serverUrl, updatedAt: 0 }),
        state: 'signed_in',
        reason: undefined,
        stepUp: undefined,
        challenge: undefined,
        ...learned,
        client,
        tokens,
        dpopKey: dpopJwk,
        account: accountOf(tokens.accessToken) ?? cur?.account,
        registrations: client.kind === 'dcr' ? remember(cur?.registrations, client) : cur?.registrations,
      },
      value: undefined,
    }));
    return statusOf(auth.name, serverUrl, await store.get(auth.name, serverUrl));
  } finally {
    listener.close();
  }
}

/** A registration added to the list (newest first, one per client id, at most four). */
function remember(list: ClientRecord[] | undefined, c: ClientRecord): ClientRecord[] {
  return [c, ...(list ?? []).filter((x) => x.clientId !== c.clientId || x.issuer !== c.issuer)].slice(0, 4);
}

/** The `sub` (or email) of a JWT access token, for display; opaque tokens have none. */
function accountOf(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { email?: unknown; sub?: unknown };
    const v = claims.email ?? claims.sub;
    return typeof v === 'string' ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Signs out: the tokens go, the client registration stays (it is reusable); state signed_out. */
export async function signOut(ctx: FlowContext): Promise<AuthStatus> {
  await ctx.store.update(ctx.auth.name, ctx.serverUrl, (cur) => ({
    record: {
      ...(cur ?? { url: ctx.serverUrl, updatedAt: 0 }),
      state: 'signed_out',
      tokens: undefined,
      dpopKey: undefined,
      reason: undefined,
      stepUp: undefined,
      account: undefined,
      challenge: undefined,
    },
    value: undefined,
  }));
  return statusOf(ctx.auth.name, ctx.serverUrl, await ctx.store.get(ctx.auth.name, ctx.serverUrl));
}

interface Loopback {
  redirectUri: string;
  callback: Promise<URLSearchParams>;
  close(): void;
}

const PAGE = (title: string, text: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title>` +
  `<body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;

/** The loopback redirect listener (RFC 8252 §7.3): the preferred port, else any free one. */
async function loopback(port: number, expectedState: () => string | undefined): Promise<Loopback> {
  let resolveCb!: (p: URLSearchParams) => void;
  const callback = new Promise<URLSearchParams>((r) => (resolveCb = r));
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || u.pathname !== '/callback') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    // A stray or stale request (an old tab, another page) does not end the sign-in: only our state does.
    const want = expectedState();
    if (want === undefined || u.searchParams.get('state') !== want) {
      res
        .writeHead(400, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end(PAGE('Not this sign-in', 'This callback does not belong to the sign-in in progress (its state differs). Nothing was done.'));
      return;
    }
    const failed = u.searchParams.get('error');
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      .end(
        failed
          ? PAGE('Sign-in refused', 'The authorization server refused the sign-in. You can close this tab.')
          : PAGE('Signed in', 'Albedo received the sign-in. You can close this tab.'),
      );
    resolveCb(u.searchParams);
  });
  const listen = (p: number): Promise<number> =>
    new Promise((resolve, reject) => {
      const onError = (e: Error): void => {
        server.off('listening', onListening);
        reject(e);
      };
      const onListening = (): void => {
        server.off('error', onError);
        resolve((server.address() as { port: number }).port);
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen(p, '127.0.0.1');
    });
  let actual: number;
  try {
    actual = await listen(port);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' && (err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    actual = await listen(0);
  }
  server.unref();
  return {
    redirectUri: `http://127.0.0.1:${actual}/callback`,
    callback,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
