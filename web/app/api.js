/// <reference lib="dom" />
// The pane's only way to the daemon: its HTTP API (docs/api.md "HTTP API
// (daemon)"), by the HttpOnly cookie the one-time login link set. Every
// request that is not a GET carries the session's CSRF token; the browser
// adds Origin itself. Nothing here keeps a secret: values typed into the
// form pass through one request body and are dropped.

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

/** @type {string | null} The session's CSRF token, from GET /v1/ui/session. */
let csrf = null;
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
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', ...o.headers };
  if (method !== 'GET' && csrf) headers['x-albedo-csrf'] = csrf;
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
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!r.ok) {
    if (r.status === 401) for (const fn of onLoggedOut) fn();
    const e = body && typeof body.error === 'object' && body.error ? body.error : { code: `HTTP_${r.status}`, message: r.statusText || 'the daemon refused' };
    throw new ApiError(r.status, e);
  }
  return { status: r.status, etag: r.headers.get('etag'), body };
}

/**
 * The cookie session: true when logged in (its CSRF token is kept for the
 * writes), false when the daemon says this browser has no session.
 * @returns {Promise<boolean>}
 */
export async function startSession() {
  try {
    const r = await api('GET', '/v1/ui/session');
    csrf = r.body.csrf;
    return true;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 404)) return false;
    throw err;
  }
}

/** Ends the cookie session (the daemon forgets it and clears the cookie). */
export async function logout() {
  try {
    await api('POST', '/v1/ui/logout');
  } finally {
    csrf = null;
    for (const fn of onLoggedOut) fn();
  }
}

/** `/v1/mcp/servers/<name>` with the name encoded, plus `suffix`. @param {string} name @param {string} [suffix] */
export const serverPath = (name, suffix = '') => `/v1/mcp/servers/${encodeURIComponent(name)}${suffix}`;

/** `/v1/auth/logins/mcp:<name>`. @param {string} name */
export const loginPath = (name) => `/v1/auth/logins/mcp:${encodeURIComponent(name)}`;

/** `/v1/sessions/<id>` plus `suffix`. @param {string} id @param {string} [suffix] */
export const sessionPath = (id, suffix = '') => `/v1/sessions/${encodeURIComponent(id)}${suffix}`;

/** What to show of any failure: an ApiError's code and message, else the thrown thing in words. @param {unknown} err */
export function problemOf(err) {
  if (err instanceof ApiError) return { code: err.code, message: err.message };
  return { code: 'ALBEDO_UNREACHABLE', message: `the daemon did not answer (${String(err)})` };
}
