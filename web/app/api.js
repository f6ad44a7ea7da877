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
/** @type {Array<() => void>} Who wants to know that another tab kept a token (this page may log in again). */
const onKept = [];
addEventListener('storage', (e) => {
  if (e.key !== TOKEN_KEY || !e.newValue) return;
  csrf = e.newValue;
  for (const fn of onKept) fn();
});

/** Calls `fn` when another tab of this origin kept a token (it logged in). @param {() => void} fn */
export function whenTokenKept(fn) {
  onKept.push(fn);
}

/** How long a request refused for its token waits for the token of a login whose page has not kept it yet. */
const TOKEN_WAIT_MS = 10_000;

/** The token this origin keeps now. */
function keptToken() {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/**
 * A token other than `sent` (the one a refused request carried): this page's, or the one kept now — another tab
 * logged in —, else the first one kept within TOKEN_WAIT_MS (that tab's redirect set the cookie before its page ran);
 * null when none comes.
 * @param {string | null} sent
 * @returns {Promise<string | null>}
 */
function tokenOtherThan(sent) {
  const kept = keptToken();
  const now = csrf && csrf !== sent ? csrf : kept && kept !== sent ? kept : null;
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => {
    /** @param {string | null} v */
    const done = (v) => {
      clearTimeout(timer);
      removeEventListener('storage', on);
      resolve(v);
    };
    /** @param {StorageEvent} e */
    const on = (e) => {
      if (e.key === TOKEN_KEY && e.newValue && e.newValue !== sent) done(e.newValue);
    };
    const timer = setTimeout(() => done(null), TOKEN_WAIT_MS);
    addEventListener('storage', on);
  });
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
  const sent = csrf;
  let { r, body } = await send(method, path, o, sent);
  // Refused for its token (the guard refuses before anything runs): another tab's login replaced the cookie. Ask
  // once more with that login's token.
  if (r.status === 403 && body?.error?.code === 'ALBEDO_CSRF') {
    const newer = await tokenOtherThan(sent);
    if (newer) {
      csrf = newer;
      ({ r, body } = await send(method, path, o, newer));
    }
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
 * One request as `api` sends it, with `token`; its answer and parsed body (null when not JSON).
 * @param {string} method @param {string} path @param {{ body?: unknown, headers?: Record<string, string> }} o
 * @param {string | null} token
 */
async function send(method, path, o, token) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', ...o.headers };
  if (token) headers['x-albedo-csrf'] = token;
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
