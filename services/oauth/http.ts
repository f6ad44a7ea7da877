/**
 * What every OAuth exchange of Albedo shares: the one timeout, the one size
 * bound for what an OAuth server sends back, the rule that credentials never
 * travel over plain HTTP to an https server's endpoints, the metadata GET,
 * and the failure shape (ALBEDO_SIGN_IN_FAILED with a specific
 * `data.reason`). Discovery, client registration and the token requests all
 * go through it.
 */
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch, type RequestInit as UndiciRequestInit } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedAuth } from '../../protocol/config.ts';
import type { CredsStore } from './store.ts';
import { redactThenCut } from '../../protocol/redact.ts';
import { cleanSecrets } from '../../protocol/redact-forms.ts';

/** Each OAuth network exchange is bounded to 15 s (docs/design.md, "Sign-in"). */
export const OAUTH_HTTP_TIMEOUT_MS = 15_000;
/**
 * The most of one OAuth response body Albedo reads (metadata, registration,
 * token, ID-JAG): real ones are a few KiB. A larger one — declared, or sent
 * without a length — is cut off at this many bytes, and the exchange fails
 * with `response_too_large`.
 */
export const OAUTH_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The `data.reason` of an ALBEDO_SIGN_IN_FAILED: which check or exchange failed. */
export type FailReason =
  | 'resource_mismatch'
  | 'issuer_mismatch'
  | 'no_metadata'
  | 'no_s256'
  | 'insecure_endpoint'
  | 'no_client'
  | 'registration_failed'
  | 'state_mismatch'
  | 'iss_missing'
  | 'iss_mismatch'
  | 'denied'
  | 'expired'
  | 'no_code'
  | 'token_refused'
  | 'refresh_refused'
  | 'network'
  | 'invalid_response'
  | 'unsupported'
  | 'response_too_large';

/** The error of a failed sign-in, grant or refresh: ALBEDO_SIGN_IN_FAILED, not_run, `data.reason` (and `extra`). */
export function signInFailed(reason: FailReason, message: string, extra: Record<string, unknown> = {}): AlbedoError {
  return new AlbedoError('ALBEDO_SIGN_IN_FAILED', message, { outcome: 'not_run', data: { reason, ...extra } });
}

/** One server's OAuth work: its auth config (name, creds file, oauth settings), its URL, and its credentials store. */
export interface FlowContext {
  auth: ResolvedAuth;
  serverUrl: string;
  store: CredsStore;
}

/** True for the failure that says a server sent more than OAUTH_MAX_RESPONSE_BYTES (passed through as it is, never re-labelled). */
export function isTooLarge(err: unknown): boolean {
  return AlbedoError.is(err) && (err.data as { reason?: string } | undefined)?.reason === 'response_too_large';
}

function tooLarge(url: string): AlbedoError {
  const u = new URL(url);
  return signInFailed(
    'response_too_large',
    `the answer of ${u.origin}${u.pathname} is larger than ${OAUTH_MAX_RESPONSE_BYTES / 1024 / 1024} MiB; it was not read`,
  );
}

/** What readCapped needs of a response (undici's and the global one alike). */
interface BodyOf {
  headers: { get(name: string): string | null };
  body: { getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(reason?: unknown): Promise<void> } } | null;
}

/**
 * A response body, read as a stream and never past OAUTH_MAX_RESPONSE_BYTES:
 * a declared length over it is refused before reading, and a body without
 * one (chunked) is cancelled at the byte that crosses it, so a server that
 * streams forever costs one buffer's worth of memory. A failure while
 * reading (reset, timeout) is `network`.
 */
export async function readCapped(res: BodyOf, url: string): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  const reader = res.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  if (declared > OAUTH_MAX_RESPONSE_BYTES) {
    await reader.cancel().catch(() => {});
    throw tooLarge(url);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let step: { done: boolean; value?: Uint8Array };
    try {
      step = await reader.read();
    } catch (err) {
      throw signInFailed('network', `reading the answer of ${url} failed: ${describeOAuthError(err)}`);
    }
    if (step.done) break;
    if (!step.value) continue;
    size += step.value.byteLength;
    if (size > OAUTH_MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw tooLarge(url);
    }
    chunks.push(step.value);
  }
  return Buffer.concat(chunks, size);
}

/** The body as JSON, or undefined when it is not JSON. */
export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * oauth4webapi's fetch: undici's, with the body read here under the size
 * bound and handed on whole, since oauth4webapi reads bodies itself and has
 * no bound of its own. A response over the bound rejects the request with
 * `response_too_large`, before oauth4webapi sees any of it.
 */
async function cappedFetch(url: string, init: Record<string, unknown>): Promise<Response> {
  const res = await undiciFetch(url, init as UndiciRequestInit);
  const body = await readCapped(res, url);
  // A null body where one is not allowed (204, 304); the status, text and headers as they came (a DPoP nonce is a header).
  return new Response(body.length > 0 ? new Uint8Array(body) : null, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers as Headers,
  });
}

/** oauth4webapi options: our fetch (size-bounded), and plain http only where the MCP server is plain http. */
export const fetchOpts = (insecure: boolean): Record<symbol, unknown> => ({
  [oauth.customFetch]: cappedFetch,
  [oauth.allowInsecureRequests]: insecure,
});

/** Endpoints may be plain http only when the MCP server itself is. */
export function insecureAllowed(serverUrl: string): boolean {
  return new URL(serverUrl).protocol === 'http:';
}

/** Throws `insecure_endpoint` for a plain-http `url` when the MCP server is https (`invalid_response` when it is no URL). */
export function requireSecure(serverUrl: string, url: string, what: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw signInFailed('invalid_response', `the ${what} ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol === 'https:') return;
  if (u.protocol === 'http:' && insecureAllowed(serverUrl)) return;
  throw signInFailed(
    'insecure_endpoint',
    `the ${what} ${u.origin}${u.pathname} is not https, and the MCP server is; refusing to send credentials over plain HTTP`,
  );
}

/** A metadata GET: redirects are followed, but a document that ended up on plain http for an https server is refused. */
export async function getJson(serverUrl: string, url: string): Promise<{ status: number; body: unknown }> {
  let res;
  try {
    res = await undiciFetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
      redirect: 'follow',
    });
  } catch (err) {
    throw signInFailed('network', `cannot fetch ${url}: ${(err as { cause?: Error }).cause?.message ?? (err as Error).message}`);
  }
  if (res.url && res.url !== url) requireSecure(serverUrl, res.url, `metadata URL ${url} redirected to`);
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => {});
    return { status: res.status, body: undefined };
  }
  return { status: 200, body: parseJson(await readCapped(res, url)) };
}

/** The most characters of a server's own text (an error_description, a failure's message) a sign-in error quotes. */
export const OAUTH_TEXT_CHARS = 300;

/**
 * The secrets in play in an OAuth exchange: the configured client secret,
 * private key, assertion and IdP ID token, and `extra` (a registered
 * client's secret, the tokens, the PKCE verifier, the authorization code).
 */
export function oauthSecrets(ctx: { auth: ResolvedAuth } | undefined, ...extra: (string | undefined | null)[]): string[] {
  const o = ctx?.auth.oauth;
  return cleanSecrets([o?.clientSecret, o?.privateKey, o?.assertion, o?.idp?.idToken, ...extra]);
}

/**
 * An authorization server's text for a sign-in error: every secret in play
 * cut out first (a token endpoint may echo the client secret it was sent),
 * then at most OAUTH_TEXT_CHARS characters (protocol/redact.ts).
 */
export function oauthText(text: string, secrets: readonly string[]): string {
  return redactThenCut(text, secrets, { keep: 'head', max: OAUTH_TEXT_CHARS });
}

/**
 * What the error said: the OAuth error code and description, every secret
 * in play (`secrets`, oauthSecrets) cut out and then bounded (oauthText).
 */
export function describeOAuthError(err: unknown, secrets: readonly string[] = []): string {
  return oauthText(describeRaw(err), secrets);
}

function describeRaw(err: unknown): string {
  if (err instanceof oauth.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ''} (HTTP ${err.status})`;
  if (err instanceof oauth.WWWAuthenticateChallengeError)
    return `HTTP ${err.status} ${err.cause.map((c) => c.parameters.error ?? c.scheme).join(', ')}`;
  if (AlbedoError.is(err)) return err.message;
  const e = err as { message?: string; cause?: { message?: string } };
  return e?.cause?.message && e.message && !e.message.includes(e.cause.message)
    ? `${e.message} (${e.cause.message})`
    : (e?.message ?? String(err));
}
