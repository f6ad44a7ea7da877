// What the terminal screen (`albedo mcp`) and the web pane call each state,
// in one place so the two never disagree (seed 002's shared status labels).
// Plain JavaScript with JSDoc types: the browser loads it as it is (no build
// step) and the CLI imports it; `tsc` checks it with the TypeScript sources.
// It imports nothing and touches nothing: labels and small pure helpers only.

/**
 * How a label should look: `ok` (green), `warn` (needs the user: yellow),
 * `error` (red), `off` (dim), `busy` (in progress).
 * @typedef {'ok' | 'warn' | 'error' | 'off' | 'busy'} Tone
 */

/** @typedef {{ text: string, tone: Tone, symbol: string }} Label */

/** @type {Record<Tone, string>} One symbol per tone, for a terminal without colours. */
export const SYMBOLS = { ok: '●', warn: '!', error: '✗', off: '○', busy: '…' };

/** @param {string} text @param {Tone} tone @returns {Label} */
const label = (text, tone) => ({ text, tone, symbol: SYMBOLS[tone] });

/**
 * A configured server's state as the settings API reports it without
 * dialling (`Server.state`): what is known from the files and the saved
 * catalogue.
 * @type {Record<string, Label>}
 */
export const SAVED_STATES = {
  disabled: label('disabled', 'off'),
  error: label('cannot start as saved', 'error'),
  needs_sign_in: label('needs sign-in', 'warn'),
  discovered: label('discovered', 'ok'),
  configured: label('not connected yet', 'off'),
};

/**
 * A server's live state in a session (`Session.servers[].state`).
 * @type {Record<string, Label>}
 */
export const LIVE_STATES = {
  ready: label('connected', 'ok'),
  advertised: label('advertised from its saved catalogue', 'ok'),
  starting: label('starting', 'busy'),
  left_out: label('unavailable', 'error'),
  needs_sign_in: label('needs sign-in', 'warn'),
  disabled: label('disabled', 'off'),
};

/**
 * A server's OAuth state (`Server.auth.state`); `null` auth (stdio, or a
 * fixed Authorization) has its own label.
 * @type {Record<string, Label>}
 */
export const AUTH_STATES = {
  none: label('no sign-in', 'off'),
  needs_sign_in: label('needs sign-in', 'warn'),
  signed_in: label('signed in', 'ok'),
  signed_out: label('signed out', 'warn'),
};

/** @type {Label} */
export const FIXED_AUTH = label('fixed credentials', 'off');

/** @type {Label} */
export const NO_AUTH = label('—', 'off');

/** A sign-in as `GET /v1/auth/logins/{login}` reports it (`Login.state`). @type {Record<string, Label>} */
export const LOGIN_STATES = {
  pending: label('waiting for the browser', 'busy'),
  completed: label('signed in', 'ok'),
  failed: label('sign-in failed', 'error'),
};

/** @param {Record<string, Label>} table @param {string | null | undefined} state @returns {Label} */
function lookup(table, state) {
  return (state && Object.hasOwn(table, state) ? table[state] : undefined) ?? label(String(state ?? 'unknown'), 'off');
}

/** @param {string | null | undefined} state @returns {Label} */
export const savedStateLabel = (state) => lookup(SAVED_STATES, state);

/** @param {string | null | undefined} state @returns {Label} */
export const liveStateLabel = (state) => lookup(LIVE_STATES, state);

/** @param {string | null | undefined} state @returns {Label} */
export const loginStateLabel = (state) => lookup(LOGIN_STATES, state);

/**
 * A server's auth label: `null` auth is a stdio server (`—`) or an http one
 * with a fixed Authorization; `signed_in` names the account when known.
 * @param {{ state: string, account?: string } | null | undefined} auth
 * @param {'http' | 'stdio'} transport
 * @returns {Label}
 */
export function authLabel(auth, transport) {
  if (!auth) return transport === 'stdio' ? NO_AUTH : FIXED_AUTH;
  const l = lookup(AUTH_STATES, auth.state);
  return auth.state === 'signed_in' && auth.account ? { ...l, text: `signed in as ${auth.account}` } : l;
}

/** "1 tool", "12 tools", "—" when no catalogue is saved. @param {number | null | undefined} n */
export function toolsLabel(n) {
  if (n === null || n === undefined) return '—';
  return n === 1 ? '1 tool' : `${n} tools`;
}

/** The transport of a `Server.config` entry: its `type`, else http when it has a url. @param {Record<string, unknown>} config */
export function transportOf(config) {
  if (config.type === 'http' || config.type === 'stdio') return config.type;
  return typeof config.url === 'string' ? 'http' : 'stdio';
}

// Words of a command line that only run something else (`npx -y pkg`): the name comes from what they run.
const RUNNERS = new Set(['npx', 'bunx', 'pnpx', 'uvx', 'pipx', 'node', 'bun', 'deno', 'python', 'python3', 'uv', 'docker', 'run', 'exec', 'dlx']);

/** A name made of what `word` names: `@scope/server-files@1.2` → `files`, `/usr/bin/docs-mcp` → `docs`. @param {string} word */
function nameOfWord(word) {
  const scope = /^@([^/]+)\//.exec(word)?.[1];
  let w = word.replace(/^@[^/]+\//, '').replace(/@[^/]*$/, '');
  // `@playwright/mcp`: the package says only "mcp", so the scope is the name.
  if (scope && /^(mcp|server|mcp[-_]server)$/i.test(w)) return scope.toLowerCase();
  w = w.split('/').filter(Boolean).pop() ?? '';
  w = w.replace(/\.(m?[jt]s|py|exe)$/i, '');
  const bare = w.replace(/^(mcp|server)[-_]+/i, '').replace(/[-_]+(mcp|server)$/i, '').replace(/^(mcp|server)[-_]+/i, '');
  return (bare || w).toLowerCase();
}

/**
 * The name a new server's form suggests until the user edits it: from an
 * http URL its host (`https://mcp.notion.com/mcp` → `notion`, an address
 * or `localhost` as it is); from a command line the package or program it
 * runs (`npx -y @modelcontextprotocol/server-filesystem /srv` →
 * `filesystem`). `''` when there is nothing to go on. Whitespace split is
 * enough for a suggestion: the command itself is split by the daemon's rules.
 * @param {'http' | 'stdio'} transport
 * @param {string} text the url, or the command line as typed
 * @returns {string}
 */
export function suggestName(transport, text) {
  const t = text.trim();
  if (!t) return '';
  if (transport === 'http') {
    let host;
    try { host = new URL(t).hostname; } catch { return ''; }
    if (!host || /^[\d.]+$/.test(host) || host.startsWith('[') || !host.includes('.')) return host.replace(/^\[|\]$/g, '');
    const labels = host.split('.').filter((l) => !/^(www|mcp|api)$/i.test(l));
    return (labels.length > 1 ? labels[labels.length - 2] : labels[0] ?? host).toLowerCase();
  }
  const words = t.split(/\s+/).map((w) => w.replace(/^['"]|['"]$/g, ''));
  // A runner is known by its last path segment too (`/usr/bin/node server.js`).
  /** @param {string} w */
  const runner = (w) => RUNNERS.has((w.split('/').pop() ?? w).toLowerCase());
  const word = words.find((w, i) => !(w.startsWith('-') || /^[A-Za-z_]\w*=/.test(w) || (runner(w) && i < words.length - 1)));
  return word ? nameOfWord(word) : '';
}
