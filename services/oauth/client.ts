/**
 * Client identity at an authorization server: which client a sign-in or a
 * grant presents (configured, a stored registration of this issuer, a Client
 * ID Metadata Document URL, or Dynamic Client Registration, RFC 7591), and
 * how it authenticates at the token endpoint.
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch } from 'undici';
import { importPKCS8 } from 'jose';
import type { webcrypto } from 'node:crypto';
import { AlbedoError } from '../../protocol/errors.ts';
import type { AuthServerMetadata } from '../../protocol/oauth.ts';
import type { ClientRecord, OAuthRecord } from './store.ts';
import type { Discovery } from './discovery.ts';
import {
  describeOAuthError,
  oauthSecrets,
  isTooLarge,
  OAUTH_HTTP_TIMEOUT_MS,
  parseJson,
  readCapped,
  signInFailed,
  type FlowContext,
} from './http.ts';

type CryptoKey = webcrypto.CryptoKey;

/** How a client with a secret authenticates here: client_secret_basic unless the server lists only client_secret_post. */
export function pickSecretMethod(as: AuthServerMetadata): string {
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

/**
 * oauth4webapi's client authentication for a client record (a private_key_jwt key comes from the
 * config; a bad one is ALBEDO_INVALID_CONFIG).
 */
export async function clientAuthFor(c: ClientRecord, ctx: FlowContext): Promise<oauth.ClientAuth> {
  switch (c.authMethod) {
    case 'client_secret_basic':
      return clientSecretBasic(c.clientSecret ?? '');
    case 'client_secret_post':
      return oauth.ClientSecretPost(c.clientSecret ?? '');
    case 'private_key_jwt': {
      const pem = ctx.auth.oauth.privateKey;
      if (!pem) throw signInFailed('no_client', 'private_key_jwt needs oauth.privateKey');
      const alg = ctx.auth.oauth.signingAlg ?? 'ES256';
      let key: CryptoKey;
      try {
        key = (await importPKCS8(pem, alg)) as CryptoKey;
      } catch (err) {
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', `oauth.privateKey is not a PKCS#8 PEM key for ${alg}: ${(err as Error).message}`, {
          outcome: 'not_run',
        });
      }
      return oauth.PrivateKeyJwt(key);
    }
    default:
      return oauth.None();
  }
}

/**
 * The client to use with this issuer: configured; else the stored one if it
 * belongs to this issuer (and redirect); else a metadata document URL where
 * supported; else Dynamic Client Registration (native public client).
 * Credentials of another issuer are never presented (SEP-2352).
 */
export async function resolveClient(
  ctx: FlowContext,
  d: Discovery,
  rec: OAuthRecord | undefined,
  redirectUri: string | undefined,
): Promise<ClientRecord> {
  const o = ctx.auth.oauth;
  if (o.clientId) {
    const authMethod = o.privateKey ? 'private_key_jwt' : o.clientSecret ? pickSecretMethod(d.as) : 'none';
    return {
      issuer: d.issuer,
      clientId: o.clientId,
      clientSecret: o.clientSecret,
      authMethod,
      kind: 'configured',
      redirectUri,
      registeredAt: Date.now(),
    };
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
    throw signInFailed(
      'no_client',
      `the authorization server ${d.issuer} offers no dynamic client registration; ` +
        'configure oauth.clientId (and clientSecret) for this server',
    );
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
    const res = await undiciFetch(d.as.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(metadata),
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
      redirect: 'manual',
    });
    if (res.status >= 300 && res.status < 400) throw new Error(`HTTP ${res.status}: the registration endpoint redirected; not followed`);
    const body = parseJson(await readCapped(res, d.as.registration_endpoint)) as Record<string, unknown> | undefined;
    if (res.status !== 201 && res.status !== 200) {
      const why =
        body && typeof body.error === 'string'
          ? `${body.error}${typeof body.error_description === 'string' ? `: ${body.error_description}` : ''}`
          : 'no error given';
      throw new Error(`HTTP ${res.status} (${why})`);
    }
    if (!body || typeof body.client_id !== 'string' || !body.client_id) throw new Error('the answer has no client_id');
    reg = body as typeof reg;
  } catch (err) {
    if (isTooLarge(err)) throw err;
    throw signInFailed(
      'registration_failed',
      `dynamic client registration at ${d.as.registration_endpoint} failed: ${describeOAuthError(err, oauthSecrets(ctx))}`,
    );
  }
  const secret = typeof reg.client_secret === 'string' ? reg.client_secret : undefined;
  const returned = typeof reg.token_endpoint_auth_method === 'string' ? reg.token_endpoint_auth_method : undefined;
  const authMethod = returned ?? (secret ? pickSecretMethod(d.as) : 'none');
  return {
    issuer: d.issuer,
    clientId: reg.client_id,
    clientSecret: secret,
    authMethod,
    kind: 'dcr',
    redirectUri,
    registeredAt: Date.now(),
  };
}
