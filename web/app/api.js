/// <reference lib="dom" />
// The pane's only way to the daemon: its HTTP API (docs/api.md "HTTP API
// (daemon)"), by the HttpOnly cookie the one-time login link set. Every
// request carries the session's CSRF token too: browsers send the cookie to
// every port of 127.0.0.1, so the daemon lets the cookie in only with the
// token, which the login gave this page alone (the redirect's fragment,
// kept in this origin's storage). The browser adds Origin itself. Nothing
// else is kept: values typed into the form pass through one request body.

/** @typedef {{ code: string, message: string, path?: Array<string | number>, outcome?: string, reason?: string }} ErrorBody */

/** An answer of the API that is not a success: `code` is the daemon's (match on it), `message` is for people. */
export class ApiError extends Error {
  /** @param {number} status @param {ErrorBody} body */
  constructor(status, body) {
    super(body.message);
    this.status = status;
    this.code = body.code;
    /** @type {Array<string | number>} */
    this.path = body.path ?? [];
  }
}

const TOKEN_KEY = 'albedo.csrf';

/** The token the login redirect put in the fragment (`#k=…`), taken out of the address bar at once. */
function takeToken() {
  const m = /^#k=([^&]+)$/.exec(location.hash);
  if (!m) return null;
  const token = decodeURIComponent(m[1] ?? '');
  history.replaceState(null, '', `${location.pathname}#/servers`);
  try {
    localStorage.setItem(TOKEN_KEY, token);
  } catch {
    /* storage off: the token lives while the page does */
  }
  return token;
}

/** @type {string | null} The session's CSRF token: from the login's fragment, else kept from an earlier page of this origin. */
let csrf =
  takeToken() ??
  (() => {
    try {
      return localStorage.getItem(TOKEN_KEY);
    } catch {
      return null;
    }
  })();
// The cookie belongs to the browser, not to this page: a login in another tab
// of this origin replaces it, and that tab keeps its token where this one
// reads it. Take it up as soon as it is kept, so this page goes on working.
addEventListener('storage', (e) => {
  if (e.key === TOKEN_KEY && e.newValue) csrf = e.newValue;
});

/** The token this origin keeps now, when it is not the one this page holds (another tab logged in since). */
function newerToken() {
  try {
    const kept = localStorage.getItem(TOKEN_KEY);
    return kept && kept !== csrf ? kept : null;
  } catch {
    return null;
  }
}

/** @type {Array<() => void>} Who wants to know that the cookie no longer works. */
const onLoggedOut = [];

/** Calls `fn` when a request finds the cookie session gone (a 401). @param {() => void} fn */
export function whenLoggedOut(fn) {
  onLoggedOut.push(fn);
}

/**
 * One request to the daemon. Resolves `{ status, etag, body }` for a 2xx
 * answer; rejects with an ApiError for an error answer (a 401 also tells
 * `whenLoggedOut`), or with the network's TypeError when the daemon is gone.
 * @param {string} method
 * @param {string} path a path of the daemon (`/v1/…`), names already encoded
 * @param {{ body?: unknown, headers?: Record<string, string> }} [o]
 * @returns {Promise<{ status: number, etag: string | null, body: any }>}
 */
export async function api(method, path, o = {}) {
  let { r, body } = await send(method, path, o);
  // Refused for a token another tab's login replaced: the daemon did nothing, so ask once more with the kept one.
  const newer = r.status === 403 && body?.error?.code === 'ALBEDO_CSRF' ? newerToken() : null;
  if (newer) {
    csrf = newer;
    ({ r, body } = await send(method, path, o));
  }
  if (!r.ok) {
    const e0 = body && typeof body.error === 'object' && body.error ? body.error : null;
    // No cookie session, or one this page holds no token for: the same to the user (open a new link).
    if (r.status === 401 || (r.status === 403 && e0?.code === 'ALBEDO_CSRF')) for (const fn of onLoggedOut) fn();
    const e =
      body && typeof body.error === 'object' && body.error
        ? body.error
        : { code: `HTTP_${r.status}`, message: r.statusText || 'the daemon refused' };
    throw new ApiError(r.status, e);
  }
  return { status: r.status, etag: r.headers.get('etag'), body };
}

/**
 * One request as `api` sends it, with this page's token; its answer and parsed body (null when not JSON).
 * @param {string} method @param {string} path @param {{ body?: unknown, headers?: Record<string, string> }} o
 */
async function send(method, path, o) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', ...o.headers };
  if (csrf) headers['x-albedo-csrf'] = csrf;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    cache: 'no-store',
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  const text = await r.text();
  /** @type {any} */
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { r, body };
}

/**
 * The cookie session: true when logged in (its CSRF token is kept for the
 * writes), false when the daemon says this browser has no session.
 * @returns {Promise<boolean>}
 */
export async function startSession() {
  if (!csrf) return false;
  try {
    const r = await api('GET', '/v1/ui/session');
    csrf = r.body.csrf;
    return true;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403 || err.status === 404)) return false;
    throw err;
  }
}

/** Ends the cookie session (the daemon forgets it and clears the cookie). */
export async function logout() {
  try {
    await api('POST', '/v1/ui/logout');
  } finally {
    csrf = null;
    try {
      localStorage.removeItem(TOKEN_KEY);
    } catch {
      /* nothing kept */
    }
    for (const fn of onLoggedOut) fn();
  }
}

/** `/v1/mcp/servers/<name>` with the name encoded, plus `suffix`. @param {string} name @param {string} [suffix] */
export const serverPath = (name, suffix = '') => `/v1/mcp/servers/${encodeURIComponent(name)}${suffix}`;

/** `/v1/auth/logins/mcp:<name>`. @param {string} name */
export const loginPath = (name) => `/v1/auth/logins/mcp:${encodeURIComponent(name)}`;

/**
 * A session's event stream: an EventSource sends no header, so the token rides in the query (same origin, no referrer).
 * @param {string} id
 */
export const eventsUrl = (id) => `/v1/sessions/${encodeURIComponent(id)}/events${csrf ? `?csrf=${encodeURIComponent(csrf)}` : ''}`;

/** `/v1/sessions/<id>` plus `suffix`. @param {string} id @param {string} [suffix] */
export const sessionPath = (id, suffix = '') => `/v1/sessions/${encodeURIComponent(id)}${suffix}`;

/** What to show of any failure: an ApiError's code and message, else the thrown thing in words. @param {unknown} err */
export function problemOf(err) {
  if (err instanceof ApiError) return { code: err.code, message: err.message };
  return { code: 'ALBEDO_UNREACHABLE', message: `the daemon did not answer (${String(err)})` };
}
