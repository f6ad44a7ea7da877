/**
 * Token endpoint requests through oauth4webapi (client authentication,
 * response validation, DPoP with its nonce retry): the authorization code,
 * refresh (with the RFC 8707 resource), and the grants without a user
 * (client credentials, jwt-bearer, the enterprise ID-JAG exchange at the
 * IdP). Each failure is ALBEDO_SIGN_IN_FAILED with a specific reason.
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch } from 'undici';
import { clientAuthFor, pickSecretMethod } from './client.ts';
import type { Discovery } from './discovery.ts';
import { dpopHandle, type DpopKey } from './dpop.ts';
import {
  describeOAuthError,
  oauthSecrets,
  oauthText,
  fetchOpts,
  insecureAllowed,
  isTooLarge,
  OAUTH_HTTP_TIMEOUT_MS,
  parseJson,
  readCapped,
  requireSecure,
  signInFailed,
  type FlowContext,
} from './http.ts';
import type { ClientRecord, TokenRecord } from './store.ts';

/**
 * A token this close to expiry is refreshed before use (half its lifetime when that is shorter, so
 * short-lived tokens are not refreshed on every request).
 */
export const REFRESH_MARGIN_MS = 60_000;

/** True when a token should be refreshed before use (REFRESH_MARGIN_MS, or half its lifetime if shorter); never without an expiry. */
export function refreshDue(t: { expiresAt?: number; obtainedAt: number }, now = Date.now()): boolean {
  if (t.expiresAt === undefined) return false;
  const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, (t.expiresAt - t.obtainedAt) / 2));
  return t.expiresAt - now < margin;
}

/** The grant types of RFC 7523 (a JWT assertion) and RFC 8693 (token exchange). */
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

const REFUSALS = [
  'invalid_grant',
  'invalid_client',
  'unauthorized_client',
  'invalid_scope',
  'access_denied',
  'invalid_request',
  'unsupported_grant_type',
];

/** True for the token endpoint saying this grant (code, refresh token, assertion) will never work: sign in again. */
export function isGrantRefusal(err: unknown): boolean {
  if (err instanceof oauth.ResponseBodyError) return REFUSALS.includes(err.error) || (err.status >= 400 && err.status < 500);
  if (err instanceof oauth.WWWAuthenticateChallengeError) return true;
  return false;
}

/** Sends a token request, retrying once with the server's DPoP nonce (RFC 9449 §8). */
async function tokenExchange(
  ctx: FlowContext,
  dpop: DpopKey | undefined,
  send: (opts: Record<string | symbol, unknown>) => Promise<Response>,
  process: (res: Response) => Promise<oauth.TokenEndpointResponse>,
): Promise<oauth.TokenEndpointResponse> {
  const handle = dpop ? dpopHandle(dpop) : undefined;
  const opts = (): Record<string | symbol, unknown> => ({
    ...fetchOpts(insecureAllowed(ctx.serverUrl)),
    signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
    ...(handle ? { DPoP: handle } : {}),
  });
  try {
    return await process(await send(opts()));
  } catch (err) {
    if (handle && oauth.isDPoPNonceError(err)) return process(await send(opts()));
    throw err;
  }
}

function tokenRecord(
  t: oauth.TokenEndpointResponse,
  issuer: string,
  resource: string | undefined,
  prev?: TokenRecord,
  requestedScope?: string,
): TokenRecord {
  const type = String(t.token_type).toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer';
  return {
    accessToken: t.access_token,
    tokenType: type,
    // A refresh response without a new refresh token keeps the old one (RFC 6749 §6).
    refreshToken: t.refresh_token ?? prev?.refreshToken,
    expiresAt: typeof t.expires_in === 'number' ? Date.now() + t.expires_in * 1000 : undefined,
    scope: t.scope ?? requestedScope ?? prev?.scope,
    issuer,
    resource,
    obtainedAt: Date.now(),
  };
}

function asObject(d: Discovery): oauth.AuthorizationServer {
  return d.as as unknown as oauth.AuthorizationServer;
}

/** Exchanges an authorization code (PKCE verifier, redirect URI, resource). */
export async function exchangeCode(
  ctx: FlowContext,
  d: Discovery,
  client: ClientRecord,
  callback: URLSearchParams,
  redirectUri: string,
  verifier: string,
  state: string,
  dpop: DpopKey | undefined,
  scope: string | undefined,
): Promise<TokenRecord> {
  const as = asObject(d);
  const c: oauth.Client = { client_id: client.clientId };
  const params = oauth.validateAuthResponse(as, c, callback, state);
  const auth = await clientAuthFor(client, ctx);
  const extra: Record<string, string> = {};
  if (d.resource) extra.resource = d.resource;
  try {
    const t = await tokenExchange(
      ctx,
      dpop,
      (o) => oauth.authorizationCodeGrantRequest(as, c, auth, params, redirectUri, verifier, { ...o, additionalParameters: extra }),
      (res) => oauth.processAuthorizationCodeResponse(as, c, res),
    );
    return tokenRecord(t, d.issuer, d.resource, undefined, scope);
  } catch (err) {
    if (isTooLarge(err)) throw err;
    throw signInFailed(
      'token_refused',
      `the token endpoint refused the authorization code: ` +
        describeOAuthError(err, oauthSecrets(ctx, client.clientSecret, verifier, callback.get('code'))),
    );
  }
}

/** Refreshes (with the resource, RFC 8707). A refusal is ALBEDO_SIGN_IN_FAILED refresh_refused; a network failure is transient. */
export async function refresh(
  ctx: FlowContext,
  d: Discovery,
  client: ClientRecord,
  tokens: TokenRecord,
  dpop: DpopKey | undefined,
): Promise<TokenRecord> {
  const as = asObject(d);
  const c: oauth.Client = { client_id: client.clientId };
  const auth = await clientAuthFor(client, ctx);
  const extra: Record<string, string> = {};
  if (tokens.resource) extra.resource = tokens.resource;
  const secrets = oauthSecrets(ctx, client.clientSecret, tokens.refreshToken, tokens.accessToken);
  try {
    const t = await tokenExchange(
      ctx,
      dpop,
      (o) => oauth.refreshTokenGrantRequest(as, c, auth, tokens.refreshToken!, { ...o, additionalParameters: extra }),
      (res) => oauth.processRefreshTokenResponse(as, c, res),
    );
    return tokenRecord(t, d.issuer, tokens.resource, tokens);
  } catch (err) {
    if (isTooLarge(err)) throw err;
    if (isGrantRefusal(err))
      throw signInFailed('refresh_refused', `the authorization server refused to refresh the token: ${describeOAuthError(err, secrets)}`);
    throw signInFailed('network', `refreshing the token failed: ${describeOAuthError(err, secrets)}`);
  }
}

/**
 * A grant without a user: client credentials (secret or private-key JWT),
 * a workload identity assertion (RFC 7523 jwt-bearer), or enterprise-managed
 * authorization (RFC 8693 exchange of the IdP's ID token for an ID-JAG at
 * the IdP, then jwt-bearer at the authorization server). One token request
 * each: a refusal is not retried with another grant.
 */
export async function nonInteractiveGrant(
  ctx: FlowContext,
  d: Discovery,
  scope: string | undefined,
  dpop: DpopKey | undefined,
): Promise<{ tokens: TokenRecord; client: ClientRecord }> {
  const o = ctx.auth.oauth;
  const as = asObject(d);
  const client: ClientRecord = {
    issuer: d.issuer,
    clientId: o.clientId ?? '',
    clientSecret: o.clientSecret,
    authMethod: o.privateKey ? 'private_key_jwt' : o.clientSecret ? pickSecretMethod(d.as) : 'none',
    kind: 'configured',
    registeredAt: Date.now(),
  };
  const c: oauth.Client = { client_id: client.clientId };
  const auth = await clientAuthFor(client, ctx);
  const params: Record<string, string> = {};
  if (scope) params.scope = scope;
  if (d.resource) params.resource = d.resource;
  let grant: string;
  if (o.grant === 'client_credentials') grant = 'client_credentials';
  else if (o.grant === 'jwt_bearer') {
    grant = JWT_BEARER;
    params.assertion = o.assertion!;
  } else {
    grant = JWT_BEARER;
    params.assertion = await idJag(ctx, d, scope);
  }
  try {
    const t = await tokenExchange(
      ctx,
      dpop,
      (opts) => oauth.genericTokenEndpointRequest(as, c, auth, grant, params, opts),
      (res) => oauth.processGenericTokenEndpointResponse(as, c, res),
    );
    return { tokens: tokenRecord(t, d.issuer, d.resource, undefined, scope), client };
  } catch (err) {
    if (isTooLarge(err)) throw err;
    throw signInFailed(
      'token_refused',
      `the authorization server refused the ${o.grant} grant: ${describeOAuthError(err, oauthSecrets(ctx, params.assertion))}`,
    );
  }
}

/** RFC 8693 at the enterprise IdP: the user's ID token for an Identity Assertion JWT Authorization Grant aimed at this AS and resource. */
async function idJag(ctx: FlowContext, d: Discovery, scope: string | undefined): Promise<string> {
  const idp = ctx.auth.oauth.idp!;
  requireSecure(ctx.serverUrl, idp.tokenEndpoint, 'identity provider token endpoint');
  const form = new URLSearchParams({
    grant_type: TOKEN_EXCHANGE,
    requested_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
    subject_token: idp.idToken,
    subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
    audience: d.issuer,
  });
  if (d.resource) form.set('resource', d.resource);
  if (scope) form.set('scope', scope);
  if (idp.clientId) form.set('client_id', idp.clientId);
  let res;
  try {
    // Never redirected: a 307 would re-post the user's ID token wherever it points.
    res = await undiciFetch(idp.tokenEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
      redirect: 'manual',
    });
  } catch (err) {
    throw signInFailed(
      'network',
      `cannot reach the identity provider at ${idp.tokenEndpoint}: ${describeOAuthError(err, oauthSecrets(ctx))}`,
    );
  }
  const body = parseJson(await readCapped(res, idp.tokenEndpoint)) as
    { access_token?: unknown; error?: unknown; error_description?: unknown } | undefined;
  if (res.status !== 200 || typeof body?.access_token !== 'string') {
    const why =
      body && typeof body.error === 'string'
        ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}`
        : 'no token in the answer';
    throw signInFailed(
      'token_refused',
      `the identity provider refused the token exchange (HTTP ${res.status}, ${oauthText(why, oauthSecrets(ctx))})`,
    );
  }
  return body.access_token;
}
