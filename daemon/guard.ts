/**
 * Who may talk to the daemon, checked on the raw request before anything
 * else runs (no body is read, no route matched, for a refused request):
 *
 * 1. `Host` must be a loopback name with the daemon's port (`127.0.0.1`,
 *    `localhost`, `[::1]`), and so must the host of an absolute-form request
 *    URL: a page on `evil.example` whose name was re-pointed at 127.0.0.1
 *    (DNS rebinding) sends `Host: evil.example:PORT` → 421. Exactly one
 *    `Host` header: Node keeps only the first of several, and a proxy or
 *    client in between may have read another → 421.
 * 2. An `Origin`, when present, must be the daemon's own
 *    (`http://127.0.0.1:PORT` or the same with `localhost` / `[::1]`): a
 *    browser on another site is refused even before the token → 403.
 * 3. `Authorization: Bearer <token>`, compared in constant time → 401 —
 *    except `GET /v1/health` (exactly that path, a query aside), which says
 *    only that the daemon is up and its version, and the web pane's static
 *    files and login (`/ui`, `/ui/…`: daemon/ui-static.ts serves them
 *    itself, never the API's router, so no spelling under /ui reaches a
 *    route). The path is compared as sent, before any normalisation, so
 *    `/v1/health/../mcp/servers` or an encoded spelling still needs the token.
 *    A gateway's own token (`/mcp/gateways/{name}`) or an ACP session's gateway token (`/mcp/sessions/{id}`, HTTP
 *    only) opens that path and no other.
 * 4. Instead of a bearer token, the web pane's cookie (ui-auth.ts) — only
 *    when no `Authorization` is sent (an invalid bearer is a 401 whatever
 *    cookie comes with it) — with its session's CSRF token in
 *    `X-Albedo-CSRF` on every request, reads included → 403 ALBEDO_CSRF: a
 *    browser sends the cookie to every port of 127.0.0.1 (SameSite and
 *    cookies ignore ports), so another local web server may hold it, and the
 *    token, given only to the daemon's own page, is what proves the page. A
 *    request that is not GET, HEAD or OPTIONS must also carry `Origin` (the
 *    daemon's own, checked in 2) → 403 ALBEDO_BAD_ORIGIN.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from './errors.ts';
import { CSRF_HEADER, uiError, type UiAuth, type UiSession } from './ui-auth.ts';
import { mcpTarget } from './mcp-mount.ts';

export const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'] as const;

/** The one route served without a token. */
export const HEALTH_PATH = '/v1/health';

/** The web pane's prefix: static files and the login, served without a credential. */
export const UI_PATH = '/ui';

/** The path of `req` exactly as sent, without its query (an absolute-form URL's path as the URL parser leaves it), or null. */
export function requestPath(req: IncomingMessage): string | null {
  const url = req.url ?? '';
  if (url.startsWith('/')) return url.split('?')[0]!;
  try {
    return new URL(url).pathname;
  } catch {
    return null;
  }
}

/** Whether `req` is `GET /v1/health`, its path exactly as sent. */
function isHealth(req: IncomingMessage): boolean {
  return req.method === 'GET' && requestPath(req) === HEALTH_PATH;
}

/** Whether `req` is for the web pane's files or login (`/ui`, `/ui/…`, as sent): daemon/ui-static.ts answers it, whatever the method. */
export function isUiRequest(req: IncomingMessage): boolean {
  const p = requestPath(req);
  return p !== null && (p === UI_PATH || p.startsWith(`${UI_PATH}/`));
}

/** The methods that change nothing: a cookie request of another method needs Origin and the CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface GuardOptions {
  /** The port the daemon listens on (known once it listens). */
  port(): number;
  token: string;
  /** The web pane's cookie sessions; without it only the bearer token is taken. */
  ui?: UiAuth;
  /** Whether `token` is one of gateway `name`'s tokens (daemon/gateway-tokens.ts): it opens that gateway and nothing else. */
  gatewayToken?(name: string, token: string): boolean;
  /** Whether `token` is one of ACP session `id`'s gateway tokens: it opens `/mcp/sessions/{id}` (HTTP) and nothing else. */
  sessionToken?(id: string, token: string): boolean;
}

function allowedHosts(port: number): Set<string> {
  const hosts = new Set<string>(LOOPBACK_NAMES.map((n) => `${n}:${port}`));
  if (port === 80) for (const n of LOOPBACK_NAMES) hosts.add(n);
  return hosts;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Whether `given` is the token, in time that does not depend on where they differ. */
export function tokenMatches(given: string, token: string): boolean {
  // Digests have one length, so timingSafeEqual applies whatever was sent.
  return timingSafeEqual(digest(given), digest(token));
}

/** How many `Host` headers `req` carries, as sent (req.headers keeps the first only). */
function hostHeaders(req: IncomingMessage): number {
  let n = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') n++;
  return n;
}

/** Why `req` is refused, or null when it may go on. */
export function refusal(req: IncomingMessage, opts: GuardOptions): ApiError | null {
  const port = opts.port();
  if (hostHeaders(req) > 1) return new ApiError(421, 'ALBEDO_BAD_HOST', 'a request must carry exactly one Host header');
  const hosts = allowedHosts(port);
  const host = (req.headers.host ?? '').toLowerCase();
  if (!hosts.has(host)) {
    const want = `127.0.0.1:${port}, localhost:${port}, [::1]:${port}`;
    return new ApiError(421, 'ALBEDO_BAD_HOST', `the daemon answers only to a loopback Host with its port (${want})`);
  }
  const url = req.url ?? '/';
  if (!url.startsWith('/')) {
    let target = '';
    try {
      target = new URL(url).host.toLowerCase();
    } catch {
      /* not a URL: refused below */
    }
    if (!hosts.has(target))
      return new ApiError(421, 'ALBEDO_BAD_HOST', "an absolute request URL must name the daemon's loopback host and port");
  }
  const origin = req.headers.origin;
  if (origin !== undefined && !LOOPBACK_NAMES.some((n) => origin.toLowerCase() === `http://${n}:${port}`)) {
    return new ApiError(403, 'ALBEDO_BAD_ORIGIN', 'requests from a web page of another origin are refused');
  }
  if (isHealth(req) || isUiRequest(req)) return null;
  const auth = req.headers.authorization;
  // A gateway (/mcp/gateways/{name}) takes the daemon's token or one of its own, never the pane's cookie.
  const mcp = mcpTarget(requestPath(req));
  const gateway = mcp && (mcp.kind === 'gateway' || mcp.kind === 'stdio') ? mcp.name : undefined;
  if (auth === undefined && opts.ui && !mcp) {
    const session = opts.ui.sessionOf(req.headers.cookie);
    if (session) return cookieRefusal(req, session, opts.ui);
  }
  const m = auth === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(auth);
  if (!m) {
    return new ApiError(
      401,
      'ALBEDO_UNAUTHORIZED',
      "this request needs Authorization: Bearer <token>, the token of $ALBEDO_HOME/daemon.json (or the web pane's cookie: albedo open)",
    );
  }
  if (tokenMatches(m[1]!, opts.token)) return null;
  if (gateway !== undefined && opts.gatewayToken?.(gateway, m[1]!)) return null;
  if (mcp?.kind === 'session' && opts.sessionToken?.(mcp.id, m[1]!)) return null;
  return new ApiError(401, 'ALBEDO_UNAUTHORIZED', "the bearer token is not this daemon's");
}

/**
 * A request by the cookie. Browsers send the cookie to every port of
 * 127.0.0.1 (cookies are not scoped by port), so another local web server
 * can receive it: the cookie alone opens nothing. Every request must echo
 * the session's CSRF token — which reached only the daemon's own page, in
 * the login redirect's fragment — in `X-Albedo-CSRF` (or, for an
 * EventSource, which cannot send headers, `?csrf=` on a GET of a session's
 * events); a change must also say where it comes from (the daemon's Origin).
 */
function cookieRefusal(req: IncomingMessage, session: UiSession, ui: UiAuth): ApiError | null {
  // A foreign Origin was refused above; a missing one is refused here for a change (a form or a script that hides it).
  if (!SAFE_METHODS.has(req.method ?? '') && req.headers.origin === undefined) {
    return new ApiError(
      403,
      'ALBEDO_BAD_ORIGIN',
      "a change made with the web pane's cookie must come with the Origin of the daemon's page",
    );
  }
  const header = req.headers[CSRF_HEADER];
  const given = typeof header === 'string' ? header : eventsToken(req);
  if (!ui.csrfMatches(session, given)) {
    return uiError(403, 'ALBEDO_CSRF', "a request made with the web pane's cookie needs X-Albedo-CSRF: the token the login gave the page");
  }
  return null;
}

/** `?csrf=` of `GET /v1/sessions/{id}/events` (an EventSource sends no header), else undefined. */
function eventsToken(req: IncomingMessage): string | undefined {
  if (req.method !== 'GET') return undefined;
  const p = requestPath(req);
  if (p === null || !/^\/v1\/sessions\/[^/]+\/events$/.test(p)) return undefined;
  const query = (req.url ?? '').split('?').slice(1).join('?');
  return new URLSearchParams(query).get('csrf') ?? undefined;
}
