/**
 * OAuth on the HTTP link's wire: a request's `Authorization` (and DPoP proof)
 * headers from the connection's LinkAuth (services/oauth/link-auth.ts), and a
 * server's 401, or 403 insufficient_scope, answered — the request is sent
 * again when the server did not run it, and ALBEDO_NEEDS_SIGN_IN is thrown
 * when only the user can help. The tokens sent join the connection's secrets.
 */
import type { Dispatcher } from 'undici';
import { authChallenge } from '../../protocol/oauth.ts';
import type { Redactor } from '../../protocol/redact.ts';
import type { LinkAuth } from '../oauth/link-auth.ts';
import { headerOf } from './http-util.ts';

/** The headers of one request, and the access token they carry; undefined for a server without OAuth. */
export type AuthHeaders = { headers: Record<string, string>; token: string | undefined } | undefined;

/** Authorization (and a DPoP proof) for one request with method `htm` to `url`, when the server uses OAuth. */
export async function authHeaders(auth: LinkAuth | undefined, redactor: Redactor, htm: string, url: URL): Promise<AuthHeaders> {
  const h = auth ? await auth.headers(htm, url) : undefined;
  // The tokens sent are secrets too: a server that echoes one in an error body, an error message or a
  // warning must not put it there (the connection's redactor, rebuilt only when one is new).
  if (auth) redactor.add(auth.secrets);
  return h;
}

/**
 * A 401, or a 403 insufficient_scope, for a request that carried (or
 * lacked) our token: true to send it again (the server did not run it);
 * throws ALBEDO_NEEDS_SIGN_IN when only the user can help.
 */
export async function authRetry(
  auth: LinkAuth | undefined,
  res: Dispatcher.ResponseData,
  sentToken: string | undefined,
  attempt: number,
  request: { renewed: boolean },
): Promise<boolean> {
  if (!auth || (res.statusCode !== 401 && res.statusCode !== 403)) return false;
  const wa = res.headers['www-authenticate'];
  if (res.statusCode === 403 && authChallenge(wa)?.error !== 'insufficient_scope') return false;
  await res.body.dump().catch(() => {});
  await auth.onChallenge(
    { status: res.statusCode, wwwAuthenticate: wa, dpopNonce: headerOf(res.headers, 'dpop-nonce'), sentToken, request },
    attempt,
  );
  return true;
}
