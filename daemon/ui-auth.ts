/**
 * Who the web pane is: one-time login links and the cookie sessions they
 * are exchanged for, kept in the daemon's memory only (a restarted daemon
 * knows none: the user runs `albedo open` again).
 *
 * A link's code and a cookie's value are 32 random bytes (base64url); only
 * their SHA-256 is kept, so a lookup compares digests (nothing that depends
 * on where two secrets differ) and a heap dump holds nothing to replay. A
 * code works once, for a while (15 minutes, `ALBEDO_UI_LINK_TTL_MS`); at most
 * MAX_LINKS are live (the oldest dropped). A cookie session lasts while it is
 * used (12 hours idle); at most MAX_SESSIONS (the least recently used
 * dropped). Each session has its CSRF token, which a state-changing request
 * by the cookie must echo in `X-Albedo-CSRF` (guard.ts).
 *
 * The cookie's name carries the port (`albedo_ui_<PORT>`): browsers do not
 * scope cookies by port, so two daemons on one host must not overwrite or
 * read each other's.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError, type ApiErrorCode } from './errors.ts';

/** How long a login link works: 15 minutes. */
export const UI_LINK_TTL_MS = 15 * 60_000;
/** How long an unused cookie session lasts: 12 hours. */
export const UI_SESSION_IDLE_MS = 12 * 3_600_000;
/** Live login codes kept at most (the oldest goes first). */
export const MAX_LINKS = 20;
/** Cookie sessions kept at most (the least recently used goes first). */
export const MAX_SESSIONS = 100;
/** The request header that carries a cookie session's CSRF token. */
export const CSRF_HEADER = 'x-albedo-csrf';

/** The web pane's refusal codes (docs/api.md), in errors.ts's HTTP_ERROR_CODES. */
export type UiErrorCode = Extract<ApiErrorCode, 'ALBEDO_CSRF' | 'ALBEDO_METHOD_NOT_ALLOWED'>;

/** An API error with one of the pane's codes. */
export function uiError(status: number, code: UiErrorCode, message: string): ApiError {
  return new ApiError(status, code, message);
}

/**
 * A login link's lifetime: 15 minutes, or `ALBEDO_UI_LINK_TTL_MS` (1 s to
 * 15 min; anything else is ignored) — a knob for tests and for users who
 * want less.
 */
export function uiLinkTtl(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.ALBEDO_UI_LINK_TTL_MS);
  return Number.isInteger(v) && v >= 1_000 && v <= UI_LINK_TTL_MS ? v : UI_LINK_TTL_MS;
}

const digest = (s: string): string => createHash('sha256').update(s, 'utf8').digest('base64url');
const secret = (): string => randomBytes(32).toString('base64url');

/** Whether two strings are equal, in time that does not depend on where they differ. */
function same(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** A cookie session as the guard and the routes see it. */
export interface UiSession {
  /** The digest of the cookie's value: the session's key (never the value). */
  readonly key: string;
  readonly csrf: string;
  /** When it ends unless used again (ms since the epoch). */
  readonly expiresAt: number;
}

export interface UiAuthOptions {
  /** The daemon's port (known once it listens): in the link and the cookie's name. */
  port(): number;
  linkTtlMs?: number;
  idleMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

interface Held {
  csrf: string;
  lastUsed: number;
}

/** The one-time links and the cookie sessions of one daemon. */
export class UiAuth {
  #port: () => number;
  #ttl: number;
  #idle: number;
  #now: () => number;
  /** digest(code) → when it expires, oldest first. */
  #links = new Map<string, number>();
  /** digest(cookie value) → session, least recently used first. */
  #sessions = new Map<string, Held>();

  constructor(o: UiAuthOptions) {
    this.#port = o.port;
    this.#ttl = o.linkTtlMs ?? UI_LINK_TTL_MS;
    this.#idle = o.idleMs ?? UI_SESSION_IDLE_MS;
    this.#now = o.now ?? Date.now;
  }

  /** `albedo_ui_<PORT>`. */
  get cookieName(): string {
    return `albedo_ui_${this.#port()}`;
  }

  /** How many codes and sessions are live (tests, status). */
  get counts(): { links: number; sessions: number } {
    this.#prune();
    return { links: this.#links.size, sessions: this.#sessions.size };
  }

  /** A new one-time login link: `http://127.0.0.1:PORT/ui/login?code=…`, and when it stops working. */
  mintLink(): { url: string; expiresAt: string } {
    this.#prune();
    const code = secret();
    const expiresAt = this.#now() + this.#ttl;
    this.#links.set(digest(code), expiresAt);
    while (this.#links.size > MAX_LINKS) this.#links.delete(this.#links.keys().next().value!);
    return { url: `http://127.0.0.1:${this.#port()}/ui/login?code=${code}`, expiresAt: new Date(expiresAt).toISOString() };
  }

  /** Consumes `code`: the value of a new session's cookie, or null for a code that is unknown, used or expired. */
  redeem(code: string): string | null {
    this.#prune();
    const key = digest(code);
    if (!this.#links.has(key)) return null;
    this.#links.delete(key);
    const value = secret();
    this.#sessions.set(digest(value), { csrf: secret(), lastUsed: this.#now() });
    while (this.#sessions.size > MAX_SESSIONS) this.#sessions.delete(this.#sessions.keys().next().value!);
    return value;
  }

  /**
   * The live session a `Cookie` header names (this daemon's cookie; of
   * several with its name, the first that is live), which counts as a use:
   * its idle time starts again. Null when there is none.
   */
  sessionOf(cookieHeader: string | undefined): UiSession | null {
    if (!cookieHeader) return null;
    this.#prune();
    const prefix = `${this.cookieName}=`;
    for (const part of cookieHeader.split(';')) {
      const p = part.trim();
      if (!p.startsWith(prefix)) continue;
      const key = digest(p.slice(prefix.length));
      const held = this.#sessions.get(key);
      if (!held) continue;
      held.lastUsed = this.#now();
      // Re-inserted: the map stays in order of last use, so the cap drops the idlest.
      this.#sessions.delete(key);
      this.#sessions.set(key, held);
      return { key, csrf: held.csrf, expiresAt: held.lastUsed + this.#idle };
    }
    return null;
  }

  /** Whether `given` is the session's CSRF token (constant time). */
  csrfMatches(s: UiSession, given: string | undefined): boolean {
    return given !== undefined && same(given, s.csrf);
  }

  /** Ends a session: its cookie no longer works. */
  forget(s: UiSession): void {
    this.#sessions.delete(s.key);
  }

  /** The `Set-Cookie` value that gives the browser a session. */
  setCookie(value: string): string {
    return `${this.cookieName}=${value}; HttpOnly; SameSite=Strict; Path=/`;
  }

  /** The `Set-Cookie` value that makes the browser drop it. */
  clearCookie(): string {
    return `${this.cookieName}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
  }

  #prune(): void {
    const now = this.#now();
    for (const [k, exp] of this.#links) if (exp <= now) this.#links.delete(k);
    for (const [k, s] of this.#sessions) if (s.lastUsed + this.#idle <= now) this.#sessions.delete(k);
  }
}
