/**
 * Which values are secrets, and the forms each may take in text a server
 * writes (protocol/redact.ts cuts every form out). Pure; no side effects.
 */
import type { ResolvedServer } from './config.ts';

/** What the launcher passes from the daemon's own environment: not the server's values. */
const DAEMON_ENV = new Set(['HOME', 'PATH', 'TMPDIR']);

/** The shortest value that is cut. */
export const MIN_SECRET_LENGTH = 4;

/** An auth scheme before a credential in a header value: `Bearer x`, `Token x`, `Basic x`, `DPoP x`… */
const SCHEME = /^\s*([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)\s+(\S.*?)\s*$/s;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** A header value's secrets: the value, the credential after its scheme, and Basic's `user:pass` and password. */
function headerSecrets(v: string, out: string[]): void {
  out.push(v);
  const m = SCHEME.exec(v);
  if (!m) return;
  const cred = m[2]!;
  out.push(cred);
  if (m[1]!.toLowerCase() !== 'basic' || !BASE64.test(cred)) return;
  const decoded = Buffer.from(cred, 'base64').toString('utf8');
  if (decoded.includes('\uFFFD')) return;
  out.push(decoded);
  const colon = decoded.indexOf(':');
  if (colon >= 0) out.push(decoded.slice(colon + 1));
}

/** Every secret value a resolved server carries, longest first (a value that contains another is cut whole). */
export function secretValues(server: ResolvedServer): string[] {
  const out: string[] = [];
  if (server.type === 'stdio') {
    for (const [k, v] of Object.entries(server.env)) if (!DAEMON_ENV.has(k)) out.push(v);
  } else {
    for (const v of Object.values(server.headers)) headerSecrets(v, out);
    const o = server.auth?.oauth;
    for (const v of [o?.clientSecret, o?.privateKey, o?.assertion, o?.idp?.idToken]) if (v) out.push(v);
  }
  return cleanSecrets(out);
}

/** Distinct values long enough to cut, longest first. */
export function cleanSecrets(values: Iterable<string | undefined | null>): string[] {
  const out = new Set<string>();
  for (const v of values) if (typeof v === 'string' && v.length >= MIN_SECRET_LENGTH) out.add(v);
  return [...out].sort((a, b) => b.length - a.length);
}

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const GO_HTML: Record<string, string> = { '&': '\\u0026', '<': '\\u003c', '>': '\\u003e' };
const hex4 = (c: number): string => c.toString(16).padStart(4, '0');

/** Go's HTML-safe JSON of `json`: each of & < > as \uXXXX, in every combination (a form only when the value has them). */
function goForms(json: string): string[] {
  const has = ['&', '<', '>'].filter((c) => json.includes(c));
  const out: string[] = [];
  for (let mask = 1; mask < 1 << has.length; mask++) {
    const pick = has.filter((_, i) => mask & (1 << i));
    out.push(json.replace(/[&<>]/g, (c) => (pick.includes(c) ? GO_HTML[c]! : c)));
  }
  return out;
}

/**
 * One secret as it may appear in text: as given; with its white space
 * folded (an excerpt folds it); JSON-escaped, also with `\/` (PHP) and with
 * Go's HTML-safe `\u0026 \u003c \u003e`, and every character as `\uXXXX`;
 * URL-encoded (encodeURIComponent, lower-case hex, form encoding with `+`);
 * HTML-escaped.
 */
export function formsOfOne(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const uri = encodeURIComponent(s);
  const html = s.replace(/[&<>"']/g, (c) => HTML[c]!);
  let u = '';
  for (let i = 0; i < s.length; i++) u += `\\u${hex4(s.charCodeAt(i))}`;
  return [
    s,
    s.replace(/\s+/g, ' '),
    json,
    json.replace(/\//g, '\\/'),
    ...goForms(json),
    u,
    u.toUpperCase().replace(/\\U/g, '\\u'),
    uri,
    uri.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    uri.replace(/%20/g, '+'),
    new URLSearchParams([['', s]]).toString().slice(1),
    html,
    html.replace(/&#39;/g, '&#x27;'),
  ];
}

/** Every form of every secret, distinct, at least MIN_SECRET_LENGTH long. */
export function formsOf(secrets: readonly string[]): string[] {
  const out = new Set<string>();
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    for (const f of formsOfOne(s)) if (f.length >= MIN_SECRET_LENGTH) out.add(f);
  }
  return [...out];
}
