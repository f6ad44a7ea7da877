// What the terminal screen (`albedo mcp`) and the web pane call each state,
// in one place so the two never disagree (docs/design.md, "The server form").
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
const RUNNERS = new Set([
  'npx',
  'bunx',
  'pnpx',
  'uvx',
  'pipx',
  'node',
  'bun',
  'deno',
  'python',
  'python3',
  'uv',
  'docker',
  'run',
  'exec',
  'dlx',
]);

// Path segments and file names that say nothing about the server (`build/index.js`): the name comes from a folder above.
const GENERIC = new Set([
  'index',
  'main',
  'server',
  'mcp',
  'cli',
  'app',
  'run',
  'start',
  'stdio',
  '__main__',
  'build',
  'dist',
  'src',
  'lib',
  'bin',
  'out',
  'target',
  'release',
  'debug',
  'node_modules',
  'scripts',
  '.',
  '..',
  '',
]);

// Path segments of a URL that say nothing about the server (`/mcp`, `/api/v1/sse`).
const GENERIC_URL = /^(mcp|sse|api|v\d+|stream|streamable|http|rpc|jsonrpc|messages?)$/i;

/** `mcp-server-fetch` → `fetch`, `weather_mcp` → `weather`: the words that say only "MCP server" dropped, lower case. @param {string} w */
function bare(w) {
  const b = w
    .replace(/^(mcp|server)[-_]+/i, '')
    .replace(/[-_]+(mcp|server)$/i, '')
    .replace(/^(mcp|server)[-_]+/i, '');
  return (b || w).toLowerCase();
}

/**
 * A name made of what `word` names: `@scope/server-files@1.2` → `files`,
 * `/usr/bin/docs-mcp` → `docs`, `/srv/weather-server/build/index.js` →
 * `weather` (a generic file name or folder is passed over for the folder
 * above it); '' when every part is generic.
 * @param {string} word
 */
function nameOfWord(word) {
  const scope = /^@([^/]+)\//.exec(word)?.[1];
  const w = word.replace(/^@[^/]+\//, '').replace(/@[^/]*$/, '');
  // `@playwright/mcp`: the package says only "mcp", so the scope is the name.
  if (scope && /^(mcp|server|mcp[-_]server)$/i.test(w)) return scope.toLowerCase();
  const segments = w.split('/').map((s) => s.replace(/\.(m?[jt]s|c?js|py|exe)$/i, ''));
  for (let i = segments.length - 1; i >= 0; i--) {
    const s = segments[i];
    if (!s || GENERIC.has(s.toLowerCase())) continue;
    const b = bare(s);
    if (!GENERIC.has(b)) return b;
  }
  return '';
}

/** Whether `host` is the machine itself: `localhost`, 127.x.x.x, ::1. @param {string} host */
const loopback = (host) => /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i.test(host);

/**
 * The name of an http URL: its domain (`https://mcp.notion.com/mcp` →
 * `notion`); for an address or a one-word host, a telling segment of the
 * path (`http://127.0.0.1:3000/weather/mcp` → `weather`), else a one-word
 * host as it is (`http://devbox:8080/mcp` → `devbox`), `local-<port>` for
 * this machine (`http://localhost:8080/` → `local-8080`), '' for another
 * address. Never an address or `localhost` itself.
 * @param {string} t
 */
function nameOfUrl(t) {
  let u;
  try {
    u = new URL(t);
  } catch {
    return '';
  }
  const host = u.hostname;
  if (!host) return '';
  const address = /^[\d.]+$/.test(host) || host.startsWith('[');
  if (!address && host.includes('.')) {
    const labels = host.split('.').filter((l) => !/^(www|mcp|api)$/i.test(l));
    return bare(labels.length > 1 ? labels[labels.length - 2] : (labels[0] ?? host));
  }
  /** @param {string} s */
  const decoded = (s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const segment = u.pathname
    .split('/')
    .map(decoded)
    .filter((s) => s && !GENERIC_URL.test(s))
    .map(nameOfWord)
    .filter(Boolean)
    .pop();
  if (segment) return segment;
  if (loopback(host)) return u.port ? `local-${u.port}` : 'local';
  return address ? '' : bare(host);
}

/**
 * The name of a command line: the package or program it runs
 * (`npx -y @modelcontextprotocol/server-filesystem /srv` → `filesystem`),
 * past runners (`npx`, `node`, `uv run`…), flags and `KEY=value` words;
 * when that is a relative path with nothing telling in it
 * (`node build/index.js`), the folder it runs in (`cwd`). Whitespace split
 * is enough for a suggestion: the command itself is split by the daemon's rules.
 * @param {string} t @param {string | undefined} cwd
 */
function nameOfCommand(t, cwd) {
  const words = t.split(/\s+/).map((w) => w.replace(/^['"]|['"]$/g, ''));
  // A runner is known by its last path segment too (`/usr/bin/node server.js`).
  /** @param {string} w */
  const runner = (w) => RUNNERS.has((w.split('/').pop() ?? w).toLowerCase());
  const word = words.find((w, i) => !(w.startsWith('-') || /^[A-Za-z_]\w*=/.test(w) || (runner(w) && i < words.length - 1)));
  if (!word) return '';
  const name = nameOfWord(word);
  if (name || word.startsWith('/') || !cwd) return name;
  return nameOfWord(cwd);
}

/**
 * `name`, or `name-2`, `name-3`… when it is taken (never a name a server has).
 * @param {string} name @param {Iterable<string>} taken
 */
export function untaken(name, taken) {
  const names = new Set(taken);
  if (!names.has(name)) return name;
  let n = 2;
  while (names.has(`${name}-${n}`)) n++;
  return `${name}-${n}`;
}

/**
 * The name a new server's form suggests until the user edits it
 * (docs/design.md, "The server form"; the pane's form and the `/mcp`
 * screen's): from an http URL its domain, from a command line the package or
 * program it runs (see nameOfUrl, nameOfCommand), with `-2`, `-3`… added when
 * a server has that name. '' when there is nothing to go on: the user types
 * one.
 * @param {'http' | 'stdio'} transport
 * @param {string} text the url, or the command line as typed
 * @param {{ taken?: Iterable<string>, cwd?: string }} [o] the names servers have; the working directory the form shows
 * @returns {string}
 */
export function suggestName(transport, text, o = {}) {
  const t = text.trim();
  if (!t) return '';
  const name = transport === 'http' ? nameOfUrl(t) : nameOfCommand(t, o.cwd?.trim() || undefined);
  return name ? untaken(name, o.taken ?? []) : '';
}

/** What both forms say of a `~` in a path (a working directory, a word of a command line): nothing expands it. */
export const TILDE_PROBLEM = 'no shell runs, so ~ is not your home directory: write the full path (/home/…)';

/**
 * What is wrong with a working directory typed in a form, or '': empty is
 * fine (the server runs in an empty directory of its own); otherwise a full
 * path, from `/` (a relative one would be taken from $ALBEDO_HOME).
 * @param {string} text
 */
export function workingDirProblem(text) {
  const t = text.trim();
  if (!t) return '';
  if (t.startsWith('~')) return TILDE_PROBLEM;
  if (!t.startsWith('/')) return 'write the full path of the directory, from /';
  return '';
}

/**
 * A `~` at the start of a word of a command line, or of a `--flag=` value: what a shell would expand and no one here will.
 * @param {string} line
 */
export const commandTildeProblem = (line) => (line.split(/\s+/).some((w) => w.startsWith('~') || /^[^'"]*=~/.test(w)) ? TILDE_PROBLEM : '');

/**
 * The first word of a command line that is a path relative to where the
 * server runs — `.`, `..`, `./x`, `../x`, a command like `build/server`, a
 * script like `build/index.js` or `server.py` — or ''. Package names
 * (`@scope/pkg`, `mcp/github`), flags and URLs are not.
 * @param {string} line
 */
export function relativePathWord(line) {
  const words = line
    .trim()
    .split(/\s+/)
    .map((w) => w.replace(/^['"]|['"]$/g, ''))
    .filter(Boolean);
  return (
    words.find((w, i) => {
      if (w.startsWith('/') || w.startsWith('-') || w.startsWith('@') || w.startsWith('~') || w.includes('://') || /^[A-Za-z_]\w*=/.test(w))
        return false;
      if (w === '.' || w === '..' || w.startsWith('./') || w.startsWith('../')) return true;
      if (i === 0) return w.includes('/');
      return /\.(m?[jt]s|cjs|py)$/i.test(w);
    }) ?? ''
  );
}

/** The mark of an empty cell in every list of servers (no tools saved, no sign-in, no problem). */
export const EMPTY = '—';

/**
 * What a server's PROBLEM cell says: the reason of its `lastError` (why it
 * cannot start as saved), without the server's name that leads it (the row
 * names the server); `EMPTY` when it has none.
 * @param {{ name: string, lastError?: { message: string } | null }} s
 */
export function problemText(s) {
  if (!s.lastError) return EMPTY;
  const m = String(s.lastError.message);
  return m.startsWith(`${s.name}: `) ? m.slice(s.name.length + 2) : m;
}

/** What both forms say of a relative path in a command with no working directory (`relativePathWord`). @param {string} word */
export const relativeWithoutCwdProblem = (word) =>
  `${word} is a relative path, and without a working directory the server runs in an empty one: ` +
  'give the directory it is in, or write the full path';
