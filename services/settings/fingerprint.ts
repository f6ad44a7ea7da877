/**
 * A server's fingerprint: the key its saved catalogue is kept under, so a
 * change to what is dialled, or to the credentials it is dialled with,
 * means "discover again".
 *
 * SHA-256 over a canonical JSON of the resolved config in which every
 * secret value (env values, header values, OAuth client secrets, keys,
 * assertions, ID tokens) is itself replaced by its SHA-256: the digest moves
 * when a value does, and the object hashed never holds a value. It is not a
 * secret store: a guessable secret can be guessed back from it offline, so
 * it stays inside the home (LMDB) and the daemon's API.
 *
 * Left out on purpose: timeouts, `isolate`, `enabled`, `enabledTools` and
 * `disabledTools` change how the host uses a server, not what the server
 * says in discovery, so they keep its saved catalogue.
 *
 * The OAuth sign-in counts by its identity, not its tokens: whether the
 * server is signed in, the issuer, the client id, the account and the
 * granted scope. A first sign-in, a sign-out, a sign-in as another account
 * or with another client or scope (a step-up) changes the fingerprint; a
 * token refresh does not (rotating refresh tokens would otherwise discard
 * the catalogue on every refresh), nor does signing in again as the same
 * account with the same client and scope, which discovers the same
 * catalogue. Known limit: an opaque access token names no account, so two
 * users of one client and scope look alike; background discovery corrects
 * the catalogue after one turn, as for any other drift.
 */
import { createHash } from 'node:crypto';
import type { ResolvedServer, ResolvedOAuth } from '../../protocol/config.ts';
import type { OAuthRecord } from '../oauth/store.ts';

/** What of an OAuth record identifies a sign-in (no token, no secret). */
export interface SignInIdentity {
  issuer: string | null;
  clientId: string | null;
  account: string | null;
  scope: string[];
}

/** The sign-in a record stands for, or null when it is not signed in (absent, needs_sign_in, signed_out). */
export function signInIdentity(rec: OAuthRecord | undefined): SignInIdentity | null {
  if (!rec || rec.state !== 'signed_in' || !rec.tokens) return null;
  const scope = [...new Set((rec.tokens.scope ?? '').split(/\s+/).filter(Boolean))].sort();
  return { issuer: rec.tokens.issuer ?? rec.issuer ?? null, clientId: rec.client?.clientId ?? null, account: rec.account ?? null, scope };
}

const digest = (s: string): string => createHash('sha256').update(s).digest('hex');
/** A secret value as it enters the fingerprint. The prefix separates these digests from any other use of SHA-256 on the same value. */
const secret = (v: string | undefined): string | null => (v === undefined ? null : digest(`albedo.settings.secret\0${v}`));
const byKey = (o: Record<string, string>, lower = false): Array<[string, string | null]> =>
  Object.entries(o)
    .map(([k, v]): [string, string | null] => [lower ? k.toLowerCase() : k, secret(v)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

function oauthPart(o: ResolvedOAuth): unknown {
  return [
    o.grant,
    o.clientId ?? null,
    secret(o.clientSecret),
    secret(o.privateKey),
    o.signingAlg ?? null,
    o.clientMetadataUrl ?? null,
    secret(o.assertion),
    o.idp ? [o.idp.tokenEndpoint, o.idp.clientId ?? null, secret(o.idp.idToken)] : null,
    o.scope ?? null,
    o.dpop,
    o.callbackPort,
  ];
}

/**
 * The fingerprint of a resolved server and its sign-in (hex SHA-256). Arrays in fixed
 * order, maps sorted by key: the same config gives the same fingerprint in every process.
 */
export function fingerprintOf(server: ResolvedServer, signIn: SignInIdentity | null): string {
  const canonical =
    server.type === 'stdio'
      ? ['albedo.settings.fingerprint/1', 'stdio', server.command, server.args, server.cwd, byKey(server.env)]
      : [
          'albedo.settings.fingerprint/1',
          'http',
          server.url,
          byKey(server.headers, true),
          server.auth ? oauthPart(server.auth.oauth) : null,
          signIn ? [signIn.issuer, signIn.clientId, signIn.account, signIn.scope] : null,
        ];
  return digest(JSON.stringify(canonical));
}
