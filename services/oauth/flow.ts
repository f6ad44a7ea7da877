/**
 * The OAuth protocol for one MCP server (2025-11-25 and 2026-07-28
 * basic/authorization; seed 000 "Sign in with OAuth"): discovery, client
 * identity, the authorization-code sign-in, the non-interactive grants, and
 * refresh. Wire work goes through oauth4webapi (PKCE, client
 * authentication, token endpoint requests and response validation, DPoP at
 * the token endpoint, registration) over undici's fetch; the MCP-specific
 * rules (discovery order, issuer and resource checks, scope choice, iss
 * table) are here, each failure a specific ALBEDO_SIGN_IN_FAILED reason.
 *
 * Used by the oauth service (sign-in) and by the transport's link auth
 * (refresh, non-interactive grants, challenges), both through creds.json.
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch } from 'undici';
import { importPKCS8, importJWK, exportJWK, SignJWT, calculateJwkThumbprint, type JWK } from 'jose';
import { randomUUID, createHash, type webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
type JsonWebKey = webcrypto.JsonWebKey;
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedAuth } from '../../protocol/config.ts';
import {
  authServerMetadataSchema, authServerMetadataUrls, protectedResourceMetadataSchema, protectedResourceMetadataUrls,
  resourceCovers, scopeUnion, type AuthServerMetadata, type ProtectedResourceMetadata,
} from '../../protocol/oauth.ts';
import type { ClientRecord, CredsStore, OAuthRecord, TokenRecord } from './store.ts';

/** Each OAuth network exchange is bounded (seed 002: 15 s). */
export const OAUTH_HTTP_TIMEOUT_MS = 15_000;
/** A token this close to expiry is refreshed before use (half its lifetime when that is shorter, so short-lived tokens are not refreshed on every request). */
export const REFRESH_MARGIN_MS = 60_000;

export function refreshDue(t: { expiresAt?: number; obtainedAt: number }, now = Date.now()): boolean {
  if (t.expiresAt === undefined) return false;
  const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, (t.expiresAt - t.obtainedAt) / 2));
  return t.expiresAt - now < margin;
}

export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

export type FailReason =
  | 'resource_mismatch' | 'issuer_mismatch' | 'no_metadata' | 'no_s256' | 'insecure_endpoint' | 'no_client'
  | 'registration_failed' | 'state_mismatch' | 'iss_missing' | 'iss_mismatch' | 'denied' | 'expired' | 'no_code'
  | 'token_refused' | 'refresh_refused' | 'network' | 'invalid_response' | 'unsupported';

export function signInFailed(reason: FailReason, message: string, extra: Record<string, unknown> = {}): AlbedoError {
  return new AlbedoError('ALBEDO_SIGN_IN_FAILED', message, { outcome: 'not_run', data: { reason, ...extra } });
}

export interface Discovery {
  /** The PRM's resource, verbatim (RFC 8707 `resource`), or none for a server without PRM (2025-03-26). */
  resource?: string;
  prm?: ProtectedResourceMetadata;
  issuer: string;
  as: AuthServerMetadata;
  /** True when no metadata exists and the 2025-03-26 default endpoints are used. */
  defaults: boolean;
  /** The protected resource metadata URL that answered. */
  prmUrl?: string;
}

/** A discovery rebuilt from what a sign-in stored, for refreshes and renewals (no network). */
export function storedDiscovery(rec: { issuer?: string; authServer?: Record<string, unknown>; resourceMetadata?: string }, resource: string | undefined): Discovery | undefined {
  if (!rec.issuer || !rec.authServer) return undefined;
  const as = authServerMetadataSchema.safeParse(rec.authServer);
  if (!as.success || as.data.issuer !== rec.issuer) return undefined;
  return { resource, issuer: rec.issuer, as: as.data, defaults: false, prmUrl: rec.resourceMetadata };
}

export interface FlowContext {
  auth: ResolvedAuth;
  serverUrl: string;
  store: CredsStore;
}

const fetchOpts = (insecure: boolean): Record<symbol, unknown> => ({ [oauth.customFetch]: undiciFetch, [oauth.allowInsecureRequests]: insecure });

/** Endpoints may be plain http only when the MCP server itself is. */
function insecureAllowed(serverUrl: string): boolean {
  return new URL(serverUrl).protocol === 'http:';
}

function requireSecure(serverUrl: string, url: string, what: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw signInFailed('invalid_response', `the ${what} ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol === 'https:') return;
  if (u.protocol === 'http:' && insecureAllowed(serverUrl)) return;
  throw signInFailed('insecure_endpoint', `the ${what} ${u.origin}${u.pathname} is not https, and the MCP server is; refusing to send credentials over plain HTTP`);
}

/** A metadata GET: redirects are followed, but a document that ended up on plain http for an https server is refused. */
async function getJson(serverUrl: string, url: string): Promise<{ status: number; body: unknown }> {
  let res;
  try {
    res = await undiciFetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS), redirect: 'follow' });
  } catch (err) {
    throw signInFailed('network', `cannot fetch ${url}: ${(err as { cause?: Error }).cause?.message ?? (err as Error).message}`);
  }
  if (res.url && res.url !== url) requireSecure(serverUrl, res.url, `metadata URL ${url} redirected to`);
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => {});
    return { status: res.status, body: undefined };
  }
  const text = await res.text();
  try {
    return { status: 200, body: JSON.parse(text) };
  } catch {
    return { status: 200, body: undefined };
  }
}

/**
 * Discovery: the challenge's resource_metadata, else the well-known PRM
 * under the endpoint's path and then at the root; the PRM's resource must
 * cover the server URL; its first authorization server is asked for RFC
 * 8414 then OIDC metadata in the spec's order; a document whose issuer is
 * not string-identical is not used. No PRM at all: the server's origin is
 * the authorization server (2025-03-26), with default endpoints when it has
 * no metadata either. Never cached: an authorization server can move
 * (SEP-2352), so each sign-in and grant discovers afresh.
 */
export async function discover(ctx: FlowContext, resourceMetadata?: string): Promise<Discovery> {
  const { serverUrl } = ctx;
  let prm: ProtectedResourceMetadata | undefined;
  let prmUrl: string | undefined;
  let unavailable: string | undefined;
  const candidates = resourceMetadata ? [resourceMetadata] : protectedResourceMetadataUrls(serverUrl);
  for (const url of candidates) {
    requireSecure(serverUrl, url, 'protected resource metadata URL');
    const { status, body } = await getJson(serverUrl, url);
    // A server error is not "no metadata": the next URL may answer, but falling back to the
    // 2025-03-26 defaults because of it would sign in somewhere else.
    if (status >= 500 || status === 429) {
      unavailable = `${url} answered HTTP ${status}`;
      continue;
    }
    if (status !== 200) {
      if (resourceMetadata) throw signInFailed('no_metadata', `the server's challenge names the resource metadata ${url}, which answered HTTP ${status}`);
      continue;
    }
    const parsed = protectedResourceMetadataSchema.safeParse(body);
    if (!parsed.success) {
      if (resourceMetadata) throw signInFailed('invalid_response', `the protected resource metadata at ${url} is malformed (it needs a resource)`);
      continue;
    }
    prm = parsed.data;
    prmUrl = url;
    break;
  }
  if (!prm && unavailable) throw signInFailed('network', `the protected resource metadata is unavailable (${unavailable}); try again later`);
  if (prm) {
    if (!resourceCovers(prm.resource, serverUrl)) {
      throw signInFailed('resource_mismatch', `the protected resource metadata names the resource ${JSON.stringify(prm.resource)}, which is not ${serverUrl} or a prefix of it; refusing to sign in for another resource`);
    }
    const issuer = prm.authorization_servers?.[0];
    if (!issuer) throw signInFailed('no_metadata', `the protected resource metadata of ${serverUrl} names no authorization server`);
    const as = await authServerMetadata(serverUrl, issuer);
    if (!as) throw signInFailed('no_metadata', `the authorization server ${issuer} publishes no usable metadata (RFC 8414 or OpenID Connect)`);
    checkEndpoints(serverUrl, as);
    return { resource: prm.resource, prm, issuer, as, defaults: false, prmUrl };
  }
  // No PRM: the MCP server's origin is its authorization server (2025-03-26).
  const origin = new URL(serverUrl).origin;
  let mismatch = false;
  const as = await authServerMetadata(serverUrl, origin, () => { mismatch = true; });
  if (as) {
    checkEndpoints(serverUrl, as);
    return { issuer: origin, as, defaults: false };
  }
  if (mismatch) throw signInFailed('issuer_mismatch', `the authorization server metadata at ${origin} names another issuer; not used`);
  const dflt: AuthServerMetadata = {
    issuer: origin,
    authorization_endpoint: `${origin}/authorize`,
    token_endpoint: `${origin}/token`,
    registration_endpoint: `${origin}/register`,
    code_challenge_methods_supported: ['S256'],
  };
  checkEndpoints(serverUrl, dflt);
  return { issuer: origin, as: dflt, defaults: true };
}

async function authServerMetadata(serverUrl: string, issuer: string, onMismatch?: () => void): Promise<AuthServerMetadata | undefined> {
  requireSecure(serverUrl, issuer, 'authorization server');
  let mismatched: string | undefined;
  let unavailable: number | undefined;
  for (const url of authServerMetadataUrls(issuer)) {
    const { status, body } = await getJson(serverUrl, url);
    if (status >= 500 || status === 429) unavailable = status;
    if (status !== 200) continue;
    const parsed = authServerMetadataSchema.safeParse(body);
    if (!parsed.success) continue;
    // RFC 8414 §3.3: identical strings, no normalisation.
    if (parsed.data.issuer !== issuer) {
      mismatched = parsed.data.issuer;
      onMismatch?.();
      continue;
    }
    return parsed.data;
  }
  if (mismatched !== undefined) throw signInFailed('issuer_mismatch', `the authorization server metadata for ${issuer} names the issuer ${JSON.stringify(mismatched)}; a document for another issuer is not used`);
  if (unavailable !== undefined) throw signInFailed('network', `the authorization server ${issuer} did not serve its metadata (HTTP ${unavailable}); try again later`);
  return undefined;
}

function checkEndpoints(serverUrl: string, as: AuthServerMetadata): void {
  for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint'] as const) {
    const v = as[k];
    if (v) requireSecure(serverUrl, v, k.replace('_', ' '));
  }
}

/** The scope to ask for: a pending step-up, else the challenge's, else the resource's, else configured; plus offline_access when listed. */
export function chooseScope(d: Discovery, rec: OAuthRecord | undefined, configured: string | undefined, challenged?: string): string | undefined {
  const base = rec?.stepUp ?? challenged ?? rec?.challenge?.scope ?? (d.prm?.scopes_supported?.length ? d.prm.scopes_supported.join(' ') : undefined) ?? configured;
  const offline = d.as.scopes_supported?.includes('offline_access') && d.as.grant_types_supported?.includes('refresh_token') !== false;
  return offline ? scopeUnion(base, 'offline_access') : base;
}

function pickSecretMethod(as: AuthServerMetadata): string {
  const m = as.token_endpoint_auth_methods_supported;
  if (!m || m.includes('client_secret_basic')) return 'client_secret_basic';
  if (m.includes('client_secret_post')) return 'client_secret_post';
  return 'client_secret_basic';
}

/**
 * client_secret_basic (RFC 6749 §2.3.1): id and secret form-urlencoded,
 * then Basic. oauth4webapi's version also escapes "-", ".", "_" and "~",
 * which servers that skip the decoding step (many do) then refuse.
 */
function clientSecretBasic(secret: string): oauth.ClientAuth {
  const enc = (v: string): string => new URLSearchParams({ v }).toString().slice(2);
  return (_as, client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${enc(client.client_id)}:${enc(secret)}`).toString('base64')}`);
  };
}

export async function clientAuthFor(c: ClientRecord, ctx: FlowContext): Promise<oauth.ClientAuth> {
  switch (c.authMethod) {
    case 'client_secret_basic': return clientSecretBasic(c.clientSecret ?? '');
    case 'client_secret_post': return oauth.ClientSecretPost(c.clientSecret ?? '');
    case 'private_key_jwt': {
      const pem = ctx.auth.oauth.privateKey;
      if (!pem) throw signInFailed('no_client', 'private_key_jwt needs oauth.privateKey');
      const alg = ctx.auth.oauth.signingAlg ?? 'ES256';
      let key: CryptoKey;
      try {
        key = (await importPKCS8(pem, alg)) as CryptoKey;
      } catch (err) {
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', `oauth.privateKey is not a PKCS#8 PEM key for ${alg}: ${(err as Error).message}`, { outcome: 'not_run' });
      }
      return oauth.PrivateKeyJwt(key);
    }
    default: return oauth.None();
  }
}

/**
 * The client to use with this issuer: configured; else the stored one if it
 * belongs to this issuer (and redirect); else a metadata document URL where
 * supported; else Dynamic Client Registration (native public client).
 * Credentials of another issuer are never presented (SEP-2352).
 */
export async function resolveClient(ctx: FlowContext, d: Discovery, rec: OAuthRecord | undefined, redirectUri: string | undefined): Promise<ClientRecord> {
  const o = ctx.auth.oauth;
  if (o.clientId) {
    const authMethod = o.privateKey ? 'private_key_jwt' : o.clientSecret ? pickSecretMethod(d.as) : 'none';
    return { issuer: d.issuer, clientId: o.clientId, clientSecret: o.clientSecret, authMethod, kind: 'configured', redirectUri, registeredAt: Date.now() };
  }
  // A registration of this issuer (and, for DCR, this redirect URI) is reused; another issuer's never.
  for (const stored of [rec?.client, ...(rec?.registrations ?? [])]) {
    if (!stored || stored.issuer !== d.issuer || stored.kind === 'configured') continue;
    if (stored.kind === 'cimd') {
      if (o.clientMetadataUrl === stored.clientId && d.as.client_id_metadata_document_supported) return stored;
      continue;
    }
    if (redirectUri === undefined || stored.redirectUri === redirectUri) return stored;
  }
  if (o.clientMetadataUrl && d.as.client_id_metadata_document_supported) {
    return { issuer: d.issuer, clientId: o.clientMetadataUrl, authMethod: 'none', kind: 'cimd', redirectUri, registeredAt: Date.now() };
  }
  if (!d.as.registration_endpoint) {
    throw signInFailed('no_client', `the authorization server ${d.issuer} offers no dynamic client registration; configure oauth.clientId (and clientSecret) for this server`);
  }
  const metadata: Record<string, string | string[]> = {
    client_name: 'Albedo',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    application_type: 'native',
  };
  if (redirectUri) metadata.redirect_uris = [redirectUri];
  // RFC 7591 by hand (lenient where servers commonly are, e.g. a secret without client_secret_expires_at).
  let reg: { client_id: string; client_secret?: unknown; token_endpoint_auth_method?: unknown };
  try {
    const res = await undiciFetch(d.as.registration_endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(metadata), signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS), redirect: 'manual' });
    if (res.status >= 300 && res.status < 400) throw new Error(`HTTP ${res.status}: the registration endpoint redirected; not followed`);
    const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    if (res.status !== 201 && res.status !== 200) {
      const why = body && typeof body.error === 'string' ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}` : 'no error given';
      throw new Error(`HTTP ${res.status} (${why})`);
    }
    if (!body || typeof body.client_id !== 'string' || !body.client_id) throw new Error('the answer has no client_id');
    reg = body as typeof reg;
  } catch (err) {
    throw signInFailed('registration_failed', `dynamic client registration at ${d.as.registration_endpoint} failed: ${describeOAuthError(err)}`);
  }
  const secret = typeof reg.client_secret === 'string' ? reg.client_secret : undefined;
  const returned = typeof reg.token_endpoint_auth_method === 'string' ? reg.token_endpoint_auth_method : undefined;
  const authMethod = returned ?? (secret ? pickSecretMethod(d.as) : 'none');
  return { issuer: d.issuer, clientId: reg.client_id, clientSecret: secret, authMethod, kind: 'dcr', redirectUri, registeredAt: Date.now() };
}

/** What the error said, without the response body's secrets: the OAuth error code and description. */
export function describeOAuthError(err: unknown): string {
  if (err instanceof oauth.ResponseBodyError) return `${err.error}${err.error_description ? `: ${err.error_description}` : ''} (HTTP ${err.status})`;
  if (err instanceof oauth.WWWAuthenticateChallengeError) return `HTTP ${err.status} ${err.cause.map((c) => c.parameters.error ?? c.scheme).join(', ')}`;
  if (AlbedoError.is(err)) return err.message;
  const e = err as { message?: string; cause?: { message?: string } };
  return e?.cause?.message && e.message && !e.message.includes(e.cause.message) ? `${e.message} (${e.cause.message})` : (e?.message ?? String(err));
}

/** True for the token endpoint saying this grant (code, refresh token, assertion) will never work: sign in again. */
export function isGrantRefusal(err: unknown): boolean {
  if (err instanceof oauth.ResponseBodyError) return ['invalid_grant', 'invalid_client', 'unauthorized_client', 'invalid_scope', 'access_denied', 'invalid_request', 'unsupported_grant_type'].includes(err.error) || (err.status >= 400 && err.status < 500);
  if (err instanceof oauth.WWWAuthenticateChallengeError) return true;
  return false;
}

// ---- DPoP (RFC 9449) ----

export interface DpopKey {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
  thumbprint: string;
}

export async function newDpopKey(): Promise<{ key: DpopKey; jwk: JsonWebKey }> {
  const pair = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])) as CryptoKeyPair;
  const jwk = (await exportJWK(pair.privateKey)) as JsonWebKey;
  return { key: await dpopKeyFrom(jwk), jwk };
}

const dpopKeys = new Map<string, Promise<DpopKey>>();

/** The key pair from its stored private JWK (cached per thread). */
export function dpopKeyFrom(jwk: JsonWebKey): Promise<DpopKey> {
  const id = `${jwk.x}.${jwk.y}`;
  let p = dpopKeys.get(id);
  if (!p) {
    p = (async () => {
      const { d: _d, key_ops: _k, ext: _e, ...pub } = jwk as JWK;
      const privateKey = (await importJWK({ ...(jwk as JWK), alg: 'ES256' }, 'ES256', { extractable: false })) as CryptoKey;
      const publicKey = (await importJWK({ ...pub, alg: 'ES256' }, 'ES256', { extractable: true })) as CryptoKey;
      const publicJwk: JWK = { kty: pub.kty, crv: pub.crv, x: pub.x, y: pub.y };
      return { privateKey, publicKey, publicJwk, thumbprint: await calculateJwkThumbprint(publicJwk) };
    })();
    dpopKeys.set(id, p);
  }
  return p;
}

/** A fresh proof for one HTTP request: unique jti, htm, htu (no query or fragment), iat, ath for a token, the nonce if the server gave one. */
export async function dpopProof(key: DpopKey, htm: string, url: string, accessToken?: string, nonce?: string): Promise<string> {
  const u = new URL(url);
  const claims: Record<string, unknown> = { htm, htu: `${u.origin}${u.pathname}`, jti: randomUUID() };
  if (accessToken) claims.ath = createHash('sha256').update(accessToken, 'ascii').digest('base64url');
  if (nonce) claims.nonce = nonce;
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.publicJwk }).setIssuedAt().sign(key.privateKey);
}

function dpopHandle(key: DpopKey): oauth.DPoPHandle {
  return oauth.DPoP({}, { privateKey: key.privateKey, publicKey: key.publicKey });
}

/**
 * Whether to bind tokens to a key (RFC 9449): configured; or, on `auto`,
 * when the authorization server takes ES256 proofs and the resource server
 * takes DPoP tokens (its challenge uses the DPoP scheme, or its metadata
 * lists DPoP algorithms or requires bound tokens). A server that only knows
 * Bearer gets Bearer tokens even from a DPoP-capable authorization server.
 */
export function wantsDpop(ctx: FlowContext, d: Discovery, challengeScheme?: string): boolean {
  const o = ctx.auth.oauth.dpop;
  if (o === true) return true;
  if (o === false) return false;
  if (!d.as.dpop_signing_alg_values_supported?.includes('ES256')) return false;
  const prm = d.prm as (ProtectedResourceMetadata & { dpop_signing_alg_values_supported?: unknown; dpop_bound_access_tokens_required?: unknown }) | undefined;
  return challengeScheme === 'dpop' || prm?.dpop_bound_access_tokens_required === true || (Array.isArray(prm?.dpop_signing_alg_values_supported) && prm.dpop_signing_alg_values_supported.includes('ES256'));
}

// ---- token endpoint ----

/** Sends a token request, retrying once with the server's DPoP nonce (RFC 9449 §8). */
async function tokenExchange(ctx: FlowContext, dpop: DpopKey | undefined, send: (opts: Record<string | symbol, unknown>) => Promise<Response>, process: (res: Response) => Promise<oauth.TokenEndpointResponse>): Promise<oauth.TokenEndpointResponse> {
  const handle = dpop ? dpopHandle(dpop) : undefined;
  const opts = (): Record<string | symbol, unknown> => ({ ...fetchOpts(insecureAllowed(ctx.serverUrl)), signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS), ...(handle ? { DPoP: handle } : {}) });
  try {
    return await process(await send(opts()));
  } catch (err) {
    if (handle && oauth.isDPoPNonceError(err)) return process(await send(opts()));
    throw err;
  }
}

function tokenRecord(t: oauth.TokenEndpointResponse, issuer: string, resource: string | undefined, prev?: TokenRecord, requestedScope?: string): TokenRecord {
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
export async function exchangeCode(ctx: FlowContext, d: Discovery, client: ClientRecord, callback: URLSearchParams, redirectUri: string, verifier: string, state: string, dpop: DpopKey | undefined, scope: string | undefined): Promise<TokenRecord> {
  const as = asObject(d);
  const c: oauth.Client = { client_id: client.clientId };
  const params = oauth.validateAuthResponse(as, c, callback, state);
  const auth = await clientAuthFor(client, ctx);
  const extra: Record<string, string> = {};
  if (d.resource) extra.resource = d.resource;
  try {
    const t = await tokenExchange(ctx, dpop, (o) => oauth.authorizationCodeGrantRequest(as, c, auth, params, redirectUri, verifier, { ...o, additionalParameters: extra }), (res) => oauth.processAuthorizationCodeResponse(as, c, res));
    return tokenRecord(t, d.issuer, d.resource, undefined, scope);
  } catch (err) {
    throw signInFailed('token_refused', `the token endpoint refused the authorization code: ${describeOAuthError(err)}`);
  }
}

/** Refreshes (with the resource, RFC 8707). A refusal is ALBEDO_SIGN_IN_FAILED refresh_refused; a network failure is transient. */
export async function refresh(ctx: FlowContext, d: Discovery, client: ClientRecord, tokens: TokenRecord, dpop: DpopKey | undefined): Promise<TokenRecord> {
  const as = asObject(d);
  const c: oauth.Client = { client_id: client.clientId };
  const auth = await clientAuthFor(client, ctx);
  const extra: Record<string, string> = {};
  if (tokens.resource) extra.resource = tokens.resource;
  try {
    const t = await tokenExchange(ctx, dpop, (o) => oauth.refreshTokenGrantRequest(as, c, auth, tokens.refreshToken!, { ...o, additionalParameters: extra }), (res) => oauth.processRefreshTokenResponse(as, c, res));
    return tokenRecord(t, d.issuer, tokens.resource, tokens);
  } catch (err) {
    if (isGrantRefusal(err)) throw signInFailed('refresh_refused', `the authorization server refused to refresh the token: ${describeOAuthError(err)}`);
    throw signInFailed('network', `refreshing the token failed: ${describeOAuthError(err)}`);
  }
}

/**
 * A grant without a user: client credentials (secret or private-key JWT),
 * a workload identity assertion (RFC 7523 jwt-bearer), or enterprise-managed
 * authorization (RFC 8693 exchange of the IdP's ID token for an ID-JAG at
 * the IdP, then jwt-bearer at the authorization server). One token request
 * each: a refusal is not retried with another grant.
 */
export async function nonInteractiveGrant(ctx: FlowContext, d: Discovery, scope: string | undefined, dpop: DpopKey | undefined): Promise<{ tokens: TokenRecord; client: ClientRecord }> {
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
    const t = await tokenExchange(ctx, dpop, (opts) => oauth.genericTokenEndpointRequest(as, c, auth, grant, params, opts), (res) => oauth.processGenericTokenEndpointResponse(as, c, res));
    return { tokens: tokenRecord(t, d.issuer, d.resource, undefined, scope), client };
  } catch (err) {
    throw signInFailed('token_refused', `the authorization server refused the ${o.grant} grant: ${describeOAuthError(err)}`);
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
    res = await undiciFetch(idp.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: form.toString(), signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS), redirect: 'manual' });
  } catch (err) {
    throw signInFailed('network', `cannot reach the identity provider at ${idp.tokenEndpoint}: ${describeOAuthError(err)}`);
  }
  const body = (await res.json().catch(() => undefined)) as { access_token?: unknown; error?: unknown; error_description?: unknown } | undefined;
  if (res.status !== 200 || typeof body?.access_token !== 'string') {
    const why = body && typeof body.error === 'string' ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}` : 'no token in the answer';
    throw signInFailed('token_refused', `the identity provider refused the token exchange (HTTP ${res.status}, ${why})`);
  }
  return body.access_token;
}

// ---- the authorization request ----

export interface PendingAuthorization {
  url: string;
  state: string;
  verifier: string;
  redirectUri: string;
  scope: string | undefined;
}

export async function authorizationUrl(d: Discovery, client: ClientRecord, redirectUri: string, scope: string | undefined): Promise<PendingAuthorization> {
  if (!d.as.authorization_endpoint) throw signInFailed('no_metadata', `the authorization server ${d.issuer} has no authorization endpoint`);
  if (!d.defaults && !d.as.code_challenge_methods_supported?.includes('S256')) {
    throw signInFailed('no_s256', `the authorization server ${d.issuer} does not list S256 in code_challenge_methods_supported; refusing to sign in without PKCE`);
  }
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const u = new URL(d.as.authorization_endpoint);
  u.searchParams.set('response_type', 'code');
  u.searchParams.set('client_id', client.clientId);
  u.searchParams.set('redirect_uri', redirectUri);
  u.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  u.searchParams.set('code_challenge_method', 'S256');
  u.searchParams.set('state', state);
  if (scope) u.searchParams.set('scope', scope);
  if (d.resource) u.searchParams.set('resource', d.resource);
  // OpenID providers issue a refresh token for offline_access only with consent; ask for it where the server says it knows the value.
  if (scope?.split(' ').includes('offline_access') && d.as.prompt_values_supported?.includes('consent')) u.searchParams.set('prompt', 'consent');
  return { url: u.toString(), state, verifier, redirectUri, scope };
}

/**
 * RFC 9207 and the state check, before the code goes anywhere: the state
 * must be ours; an `iss` must equal the issuer string; one the server
 * promised and left out is refused; an `error` is the user's or server's refusal.
 */
export function checkCallback(d: Discovery, p: PendingAuthorization, params: URLSearchParams): void {
  const state = params.get('state');
  if (state !== p.state) throw signInFailed('state_mismatch', state ? 'the callback carries a state this sign-in did not issue (forged, or from another sign-in)' : 'the callback carries no state');
  const iss = params.get('iss');
  if (iss === null && d.as.authorization_response_iss_parameter_supported) throw signInFailed('iss_missing', `the authorization server promised an iss parameter (RFC 9207) and the callback has none`);
  if (iss !== null && iss !== d.issuer) throw signInFailed('iss_mismatch', `the callback's iss ${JSON.stringify(iss)} is not the issuer ${JSON.stringify(d.issuer)} (RFC 9207); a mix-up is refused`);
  const error = params.get('error');
  if (error) throw signInFailed('denied', `the authorization server refused: ${error}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}`);
  if (!params.get('code')) throw signInFailed('no_code', 'the callback carries no authorization code');
}
