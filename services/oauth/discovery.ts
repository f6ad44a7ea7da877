/**
 * Discovery for one MCP server (2025-11-25 and 2026-07-28
 * basic/authorization): its Protected Resource Metadata (RFC 9728), then its
 * authorization server's metadata (RFC 8414, then OpenID Connect), with the
 * spec's URL order and a string-identical issuer; the 2025-03-26 defaults
 * for a server without metadata. Every refusal is a specific
 * ALBEDO_SIGN_IN_FAILED reason.
 */
import {
  authServerMetadataSchema,
  authServerMetadataUrls,
  protectedResourceMetadataSchema,
  protectedResourceMetadataUrls,
  resourceCovers,
  type AuthServerMetadata,
  type ProtectedResourceMetadata,
} from '../../protocol/oauth.ts';
import { getJson, requireSecure, signInFailed, type FlowContext } from './http.ts';

/** Where a server's tokens come from: its resource (and metadata), and the authorization server that issues them. */
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
export function storedDiscovery(
  rec: { issuer?: string; authServer?: Record<string, unknown>; resourceMetadata?: string },
  resource: string | undefined,
): Discovery | undefined {
  if (!rec.issuer || !rec.authServer) return undefined;
  const as = authServerMetadataSchema.safeParse(rec.authServer);
  if (!as.success || as.data.issuer !== rec.issuer) return undefined;
  return { resource, issuer: rec.issuer, as: as.data, defaults: false, prmUrl: rec.resourceMetadata };
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
      if (resourceMetadata)
        throw signInFailed('no_metadata', `the server's challenge names the resource metadata ${url}, which answered HTTP ${status}`);
      continue;
    }
    const parsed = protectedResourceMetadataSchema.safeParse(body);
    if (!parsed.success) {
      if (resourceMetadata)
        throw signInFailed('invalid_response', `the protected resource metadata at ${url} is malformed (it needs a resource)`);
      continue;
    }
    prm = parsed.data;
    prmUrl = url;
    break;
  }
  if (!prm && unavailable)
    throw signInFailed('network', `the protected resource metadata is unavailable (${unavailable}); try again later`);
  if (prm) {
    if (!resourceCovers(prm.resource, serverUrl)) {
      throw signInFailed(
        'resource_mismatch',
        `the protected resource metadata names the resource ${JSON.stringify(prm.resource)}, ` +
          `which is not ${serverUrl} or a prefix of it; refusing to sign in for another resource`,
      );
    }
    const issuer = prm.authorization_servers?.[0];
    if (!issuer) throw signInFailed('no_metadata', `the protected resource metadata of ${serverUrl} names no authorization server`);
    const as = await authServerMetadata(serverUrl, issuer);
    if (!as)
      throw signInFailed('no_metadata', `the authorization server ${issuer} publishes no usable metadata (RFC 8414 or OpenID Connect)`);
    checkEndpoints(serverUrl, as);
    return { resource: prm.resource, prm, issuer, as, defaults: false, prmUrl };
  }
  // No PRM: the MCP server's origin is its authorization server (2025-03-26).
  const origin = new URL(serverUrl).origin;
  let mismatch = false;
  const as = await authServerMetadata(serverUrl, origin, () => {
    mismatch = true;
  });
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
  if (mismatched !== undefined) {
    throw signInFailed(
      'issuer_mismatch',
      `the authorization server metadata for ${issuer} names the issuer ${JSON.stringify(mismatched)}; ` +
        'a document for another issuer is not used',
    );
  }
  if (unavailable !== undefined) {
    throw signInFailed('network', `the authorization server ${issuer} did not serve its metadata (HTTP ${unavailable}); try again later`);
  }
  return undefined;
}

function checkEndpoints(serverUrl: string, as: AuthServerMetadata): void {
  for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint'] as const) {
    const v = as[k];
    if (v) requireSecure(serverUrl, v, k.replace('_', ' '));
  }
}
