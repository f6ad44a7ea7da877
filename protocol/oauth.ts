/**
 * OAuth shapes for MCP authorization (2025-11-25 and 2026-07-28
 * basic/authorization): the WWW-Authenticate challenge, Protected Resource
 * Metadata (RFC 9728) and Authorization Server Metadata (RFC 8414 / OpenID
 * Connect Discovery). Types, schemas and pure functions only.
 */
import { z } from 'zod';

export interface Challenge {
  /** The auth scheme, lower-cased (`bearer`, `dpop`). */
  scheme: string;
  /** The auth-params by lower-cased name, in a null-prototype object. */
  params: Record<string, string>;
}

/**
 * Parses a WWW-Authenticate value (RFC 9110 §11.6.1): one or more
 * challenges, each a scheme and comma-separated auth-params whose values are
 * tokens or quoted strings. A token68 challenge keeps no params. Lenient on
 * whitespace, strict on quoting: an unterminated quote ends the value.
 */
export function parseWwwAuthenticate(header: string | string[] | undefined): Challenge[] {
  const text = Array.isArray(header) ? header.join(', ') : (header ?? '');
  const out: Challenge[] = [];
  let i = 0;
  const n = text.length;
  const ws = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\t')) i++;
  };
  const token = (): string => {
    const start = i;
    while (i < n && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(text[i]!)) i++;
    return text.slice(start, i);
  };
  let current: Challenge | undefined;
  while (i < n) {
    ws();
    if (text[i] === ',') {
      i++;
      continue;
    }
    const start = i;
    const word = token();
    if (!word) {
      i++;
      continue;
    }
    ws();
    if (text[i] === '=' && current && text[i + 1] !== '=') {
      // auth-param: name = token / quoted-string
      i++;
      ws();
      let value = '';
      if (text[i] === '"') {
        i++;
        while (i < n && text[i] !== '"') {
          if (text[i] === '\\' && i + 1 < n) i++;
          value += text[i];
          i++;
        }
        i++;
      } else value = token();
      current.params[word.toLowerCase()] = value;
      continue;
    }
    // A new challenge: the scheme, then params (or a token68, skipped).
    i = start + word.length;
    // A null-prototype record: parameter names come off the wire (`__proto__`, `constructor` are plain names here).
    current = { scheme: word.toLowerCase(), params: Object.create(null) as Record<string, string> };
    out.push(current);
    ws();
    const rest = text.slice(i);
    const t68 = /^[A-Za-z0-9\-._~+/]+=*(?=\s*(,|$))/.exec(rest);
    if (t68 && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*=[^=]/.test(rest)) i += t68[0].length;
  }
  return out;
}

/** The Bearer or DPoP challenge of a 401/403, with the MCP-relevant parameters. */
export function authChallenge(
  header: string | string[] | undefined,
): { scheme: string; error?: string; scope?: string; resourceMetadata?: string } | undefined {
  const all = parseWwwAuthenticate(header);
  const c =
    all.find((x) => x.scheme === 'dpop' && x.params.error) ??
    all.find((x) => x.scheme === 'bearer') ??
    all.find((x) => x.scheme === 'dpop');
  if (!c) return undefined;
  return { scheme: c.scheme, error: c.params.error, scope: c.params.scope, resourceMetadata: c.params.resource_metadata };
}

/** RFC 9728 Protected Resource Metadata: what Albedo reads of it. */
export const protectedResourceMetadataSchema = z.looseObject({
  resource: z.string().min(1),
  authorization_servers: z.array(z.string().min(1)).optional(),
  scopes_supported: z.array(z.string()).optional(),
});
export type ProtectedResourceMetadata = z.infer<typeof protectedResourceMetadataSchema>;

/** RFC 8414 / OIDC Discovery metadata: what Albedo reads of it. */
export const authServerMetadataSchema = z.looseObject({
  issuer: z.string().min(1),
  authorization_endpoint: z.string().optional(),
  token_endpoint: z.string().optional(),
  registration_endpoint: z.string().optional(),
  scopes_supported: z.array(z.string()).optional(),
  response_types_supported: z.array(z.string()).optional(),
  grant_types_supported: z.array(z.string()).optional(),
  code_challenge_methods_supported: z.array(z.string()).optional(),
  token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
  token_endpoint_auth_signing_alg_values_supported: z.array(z.string()).optional(),
  authorization_response_iss_parameter_supported: z.boolean().optional(),
  client_id_metadata_document_supported: z.boolean().optional(),
  dpop_signing_alg_values_supported: z.array(z.string()).optional(),
  revocation_endpoint: z.string().optional(),
  prompt_values_supported: z.array(z.string()).optional(),
});
export type AuthServerMetadata = z.infer<typeof authServerMetadataSchema>;

/**
 * Where an issuer's metadata may live, in the spec's order
 * (2025-11-25 basic/authorization, "Authorization Server Metadata
 * Discovery"): RFC 8414 with the path inserted, then OpenID Connect with the
 * path inserted, then OpenID Connect appended to the path.
 */
export function authServerMetadataUrls(issuer: string): string[] {
  const u = new URL(issuer);
  const p = u.pathname.replace(/\/+$/, '');
  if (p === '') return [`${u.origin}/.well-known/oauth-authorization-server`, `${u.origin}/.well-known/openid-configuration`];
  return [
    `${u.origin}/.well-known/oauth-authorization-server${p}`,
    `${u.origin}/.well-known/openid-configuration${p}`,
    `${u.origin}${p}/.well-known/openid-configuration`,
  ];
}

/** RFC 9728 §3.1: the path-inserted well-known URL for a resource, then the root one. */
export function protectedResourceMetadataUrls(serverUrl: string): string[] {
  const u = new URL(serverUrl);
  const p = u.pathname.replace(/\/+$/, '');
  const root = `${u.origin}/.well-known/oauth-protected-resource`;
  return p === '' ? [root] : [`${root}${p}`, root];
}

/**
 * Whether the resource a PRM names covers the server URL (same origin, and
 * a path that is a prefix on a segment boundary). RFC 9728 §3.3 wants the
 * resource to be the URL the metadata was looked up for; MCP lets it be a
 * prefix of the server URL.
 */
export function resourceCovers(resource: string, serverUrl: string): boolean {
  let r: URL;
  let s: URL;
  try {
    r = new URL(resource);
    s = new URL(serverUrl);
  } catch {
    return false;
  }
  if (r.hash || r.origin !== s.origin) return false;
  const rp = r.pathname.replace(/\/+$/, '');
  const sp = s.pathname.replace(/\/+$/, '');
  return rp === '' || sp === rp || sp.startsWith(`${rp}/`);
}

/** Space-separated scope strings merged, order kept, duplicates dropped. */
export function scopeUnion(...scopes: Array<string | undefined>): string | undefined {
  const seen: string[] = [];
  for (const s of scopes) for (const x of (s ?? '').split(/\s+/)) if (x && !seen.includes(x)) seen.push(x);
  return seen.length ? seen.join(' ') : undefined;
}

/** True when every scope of `wanted` is in `have`. */
export function scopeCovers(have: string | undefined, wanted: string | undefined): boolean {
  const h = new Set((have ?? '').split(/\s+/).filter(Boolean));
  return (wanted ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .every((x) => h.has(x));
}

/** Where a server's sign-in stands. */
export type AuthState = 'none' | 'needs_sign_in' | 'signed_in' | 'signed_out';

/** What a credentials record says, for people and APIs: never a token or secret. */
export interface AuthStatus {
  server: string;
  url: string;
  state: AuthState;
  account?: string;
  /** ISO 8601, when the access token expires (if the server said). */
  expires_at?: string;
  scope?: string;
  step_up?: string;
  reason?: string;
  issuer?: string;
  client?: { id: string; kind: string; issuer: string };
  /** `DPoP` for sender-constrained tokens. */
  token_type?: string;
  refreshable?: boolean;
}
