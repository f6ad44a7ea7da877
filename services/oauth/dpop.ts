/**
 * DPoP (RFC 9449): the key pair kept with the tokens, the proofs for MCP
 * requests (jose: `ath`, `htm`, `htu`, a fresh `jti`, the resource server's
 * nonce), the handle oauth4webapi uses at the token endpoint, and the rule
 * for when tokens are bound at all.
 */
import * as oauth from 'oauth4webapi';
import { importJWK, exportJWK, SignJWT, calculateJwkThumbprint, type JWK } from 'jose';
import { randomUUID, createHash, type webcrypto } from 'node:crypto';
import type { ProtectedResourceMetadata } from '../../protocol/oauth.ts';
import type { Discovery } from './discovery.ts';
import type { FlowContext } from './http.ts';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
type JsonWebKey = webcrypto.JsonWebKey;

/** A DPoP key pair, imported (the private key not extractable), with its public JWK and RFC 7638 thumbprint. */
export interface DpopKey {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
  thumbprint: string;
}

/** A fresh P-256 key pair, and its private JWK to store with the tokens. */
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

/**
 * A fresh proof for one HTTP request: unique jti, htm, htu (no query or fragment), iat, ath for a
 * token, the nonce if the server gave one.
 */
export async function dpopProof(key: DpopKey, htm: string, url: string, accessToken?: string, nonce?: string): Promise<string> {
  const u = new URL(url);
  const claims: Record<string, unknown> = { htm, htu: `${u.origin}${u.pathname}`, jti: randomUUID() };
  if (accessToken) claims.ath = createHash('sha256').update(accessToken, 'ascii').digest('base64url');
  if (nonce) claims.nonce = nonce;
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.publicJwk }).setIssuedAt().sign(key.privateKey);
}

/** The key as oauth4webapi's DPoP handle for token requests (it keeps the authorization server's nonce). */
export function dpopHandle(key: DpopKey): oauth.DPoPHandle {
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
  const prm = d.prm as
    (ProtectedResourceMetadata & { dpop_signing_alg_values_supported?: unknown; dpop_bound_access_tokens_required?: unknown }) | undefined;
  return (
    challengeScheme === 'dpop' ||
    prm?.dpop_bound_access_tokens_required === true ||
    (Array.isArray(prm?.dpop_signing_alg_values_supported) && prm.dpop_signing_alg_values_supported.includes('ES256'))
  );
}
