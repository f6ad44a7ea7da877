/**
 * The OAuth protocol for one MCP server (2025-11-25 and 2026-07-28
 * basic/authorization; docs/design.md, "Sign-in"): discovery, client
 * identity, the authorization-code sign-in, the non-interactive grants, and
 * refresh. Wire work goes through oauth4webapi (PKCE, client
 * authentication, token endpoint requests and response validation, DPoP at
 * the token endpoint, registration) over undici's fetch; the MCP-specific
 * rules (discovery order, issuer and resource checks, scope choice, iss
 * table) are here, each failure a specific ALBEDO_SIGN_IN_FAILED reason.
 *
 * This file is the front door and holds the authorization request itself
 * (scope choice, the URL with PKCE and state, the callback checks); the
 * rest lives by seam: http.ts (timeout, https rule, failure shape),
 * discovery.ts, client.ts (client identity, DCR), token.ts (token endpoint
 * grants), dpop.ts. Used by the oauth service (sign-in) and by the
 * transport's link auth (refresh, non-interactive grants, challenges), both
 * through creds.json.
 */
import * as oauth from 'oauth4webapi';
import { scopeUnion } from '../../protocol/oauth.ts';
import type { Discovery } from './discovery.ts';
import { oauthSecrets, oauthText, signInFailed } from './http.ts';
import type { ClientRecord, OAuthRecord } from './store.ts';

export * from './http.ts';
export * from './discovery.ts';
export * from './client.ts';
export * from './dpop.ts';
export * from './token.ts';

/** The scope to ask for: a pending step-up, else the challenge's, else the resource's, else configured; plus offline_access when listed. */
export function chooseScope(
  d: Discovery,
  rec: OAuthRecord | undefined,
  configured: string | undefined,
  challenged?: string,
): string | undefined {
  const resourceScopes = d.prm?.scopes_supported?.length ? d.prm.scopes_supported.join(' ') : undefined;
  const base = rec?.stepUp ?? challenged ?? rec?.challenge?.scope ?? resourceScopes ?? configured;
  const offline = d.as.scopes_supported?.includes('offline_access') && d.as.grant_types_supported?.includes('refresh_token') !== false;
  return offline ? scopeUnion(base, 'offline_access') : base;
}

/** An authorization request sent to the browser: what the callback and the code exchange must match. */
export interface PendingAuthorization {
  url: string;
  state: string;
  verifier: string;
  redirectUri: string;
  scope: string | undefined;
}

/** The authorization URL (code flow, PKCE S256, state, resource); refused without S256 unless the 2025-03-26 defaults are in use. */
export async function authorizationUrl(
  d: Discovery,
  client: ClientRecord,
  redirectUri: string,
  scope: string | undefined,
): Promise<PendingAuthorization> {
  if (!d.as.authorization_endpoint) throw signInFailed('no_metadata', `the authorization server ${d.issuer} has no authorization endpoint`);
  if (!d.defaults && !d.as.code_challenge_methods_supported?.includes('S256')) {
    throw signInFailed(
      'no_s256',
      `the authorization server ${d.issuer} does not list S256 in code_challenge_methods_supported; refusing to sign in without PKCE`,
    );
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
  if (scope?.split(' ').includes('offline_access') && d.as.prompt_values_supported?.includes('consent'))
    u.searchParams.set('prompt', 'consent');
  return { url: u.toString(), state, verifier, redirectUri, scope };
}

/**
 * RFC 9207 and the state check, before the code goes anywhere: the state
 * must be ours; an `iss` must equal the issuer string; one the server
 * promised and left out is refused; an `error` is the user's or server's refusal.
 */
export function checkCallback(d: Discovery, p: PendingAuthorization, params: URLSearchParams): void {
  const state = params.get('state');
  if (state !== p.state) {
    throw signInFailed(
      'state_mismatch',
      state ? 'the callback carries a state this sign-in did not issue (forged, or from another sign-in)' : 'the callback carries no state',
    );
  }
  const iss = params.get('iss');
  if (iss === null && d.as.authorization_response_iss_parameter_supported) {
    throw signInFailed('iss_missing', 'the authorization server promised an iss parameter (RFC 9207) and the callback has none');
  }
  if (iss !== null && iss !== d.issuer) {
    throw signInFailed(
      'iss_mismatch',
      `the callback's iss ${JSON.stringify(oauthText(iss, []))} is not the issuer ${JSON.stringify(d.issuer)} (RFC 9207); ` +
        'a mix-up is refused',
    );
  }
  const error = params.get('error');
  const description = params.get('error_description');
  // The server's text, bounded, with the verifier and any code cut out (http.ts oauthText).
  const said = oauthText(`${error}${description ? `: ${description}` : ''}`, oauthSecrets(undefined, p.verifier, params.get('code')));
  if (error) throw signInFailed('denied', `the authorization server refused: ${said}`);
  if (!params.get('code')) throw signInFailed('no_code', 'the callback carries no authorization code');
}
