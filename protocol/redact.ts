/**
 * Secret values kept out of text Albedo composes from a server's output (its
 * stderr tail, an HTTP error body's excerpt): every value the resolved server
 * was given that may be a secret — its environment (HOME, PATH and TMPDIR
 * aside), its header values, its OAuth client's secrets — is cut out. A
 * value shorter than four characters is not cut (no secret is that short,
 * and cutting "1" or "on" would shred the text). Pure; no side effects.
 */
import type { ResolvedServer } from './config.ts';

/** What the launcher passes from the daemon's own environment: not the server's values. */
const DAEMON_ENV = new Set(['HOME', 'PATH', 'TMPDIR']);

/** The shortest value that is cut. */
export const MIN_SECRET_LENGTH = 4;

/** Every secret value a resolved server carries, longest first (a value that contains another is cut whole). */
export function secretValues(server: ResolvedServer): string[] {
  const out: string[] = [];
  if (server.type === 'stdio') {
    for (const [k, v] of Object.entries(server.env)) if (!DAEMON_ENV.has(k)) out.push(v);
  } else {
    for (const v of Object.values(server.headers)) {
      out.push(v);
      // `Bearer <token>`: the token alone may be echoed back.
      const m = /^\s*bearer\s+(.+)$/i.exec(v);
      if (m) out.push(m[1]!.trim());
    }
    const o = server.auth?.oauth;
    for (const v of [o?.clientSecret, o?.privateKey, o?.assertion, o?.idp?.idToken]) if (v) out.push(v);
  }
  return [...new Set(out.filter((v) => v.length >= MIN_SECRET_LENGTH))].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each secret replaced by `[redacted]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= MIN_SECRET_LENGTH) out = out.split(s).join('[redacted]');
  return out;
}
