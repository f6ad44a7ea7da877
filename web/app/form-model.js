/// <reference lib="dom" />
// The server form's data, apart from how it looks: a draft made from a
// saved server (or empty), the checks made before anything is sent, and the
// PUT (add) or merge-PATCH (edit) body the settings API takes (docs/api.md
// "Settings routes", "Secrets"). Secrets follow the API's rules: a value
// stores it, null removes the stored one, left out keeps it.

import { commandTildeProblem, relativePathWord, relativeWithoutCwdProblem, transportOf, workingDirProblem } from '../shared/labels.js';

/**
 * One env entry of the form: `secret` masks its value while typed (the user
 * marks it; every value is stored by the daemon in creds.json all the same
 * and never shown back).
 * @typedef {{ id: number, key: string, value: string, secret: boolean, stored: boolean, remove: boolean }} EnvRow
 */
/**
 * @typedef {object} Draft
 * @property {'http' | 'stdio'} transport
 * @property {string} url
 * @property {string} command the command line as typed
 * @property {string} cwd the working directory (stdio): a full path, or '' for an empty directory of the server's own
 * @property {string} name
 * @property {boolean} nameEdited whether the user typed the name (it is suggested until then)
 * @property {string} bearer
 * @property {boolean} storedBearer
 * @property {boolean} removeBearer
 * @property {string} headerName
 * @property {string} headerValue
 * @property {string | null} storedHeader the name of the stored header, if one is
 * @property {boolean} removeHeader
 * @property {EnvRow[]} env
 * @property {Array<[string, string]>} named what the saved entry reads from the daemon's environment: [env entry or header, variable]
 */
/** @typedef {Record<string, string>} Problems field → what is wrong with it */

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

let nextId = 1;
/** A new env row (ids keep rows and their labels apart). @param {Partial<EnvRow>} [o] @returns {EnvRow} */
export const envRow = (o = {}) => ({ id: nextId++, key: '', value: '', secret: false, stored: false, remove: false, ...o });

/** The form of a new server: http, nothing typed. @returns {Draft} */
export function emptyDraft() {
  return {
    transport: 'http',
    url: '',
    command: '',
    cwd: '',
    name: '',
    nameEdited: false,
    bearer: '',
    storedBearer: false,
    removeBearer: false,
    headerName: '',
    headerValue: '',
    storedHeader: null,
    removeHeader: false,
    env: [],
    named: [],
  };
}

/**
 * A word as a shell would need it typed to mean that word again (and as
 * the daemon's splitter reads it): plain words as they are, others in
 * single quotes. A first word holding `=` is quoted too (a shell would take
 * it for an assignment).
 * @param {string} w @param {boolean} first
 */
export function quoteWord(w, first) {
  if (w !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) && !(first && w.includes('='))) return w;
  return `'${w.replace(/'/g, `'\\''`)}'`;
}

/** A saved command and its arguments as one command line. @param {string} command @param {string[]} args */
export const joinCommand = (command, args) => [command, ...args].map((w, i) => quoteWord(w, i === 0)).join(' ');

/**
 * The form of a saved server (`Server` of the settings API): its url or
 * command line, and which secrets are stored (never a value: the API has none).
 * @param {any} server
 * @returns {Draft}
 */
export function draftFromServer(server) {
  const c = server.config;
  const transport = transportOf(c);
  const d = emptyDraft();
  d.transport = transport;
  d.name = server.name;
  d.nameEdited = true;
  /** @param {Record<string, unknown> | undefined} table @returns {Array<[string, string]>} */
  const namedOf = (table) =>
    Object.entries(table ?? {}).flatMap(([k, v]) => {
      const name = v && typeof v === 'object' ? /** @type {{ env?: unknown }} */ (v).env : undefined;
      return typeof name === 'string' ? [/** @type {[string, string]} */ ([k, name])] : [];
    });
  if (transport === 'http') {
    d.named = [
      ...(c.bearerTokenEnvVar ? [/** @type {[string, string]} */ (['Authorization: Bearer', c.bearerTokenEnvVar])] : []),
      ...namedOf(c.headers),
    ];
    d.url = c.url ?? '';
    d.storedBearer = !!server.secrets?.bearer;
    d.storedHeader = server.secrets?.header ?? null;
    d.headerName = d.storedHeader ?? '';
  } else {
    d.named = namedOf(c.env);
    d.command = joinCommand(c.command ?? '', c.args ?? []);
    d.cwd = c.cwd ?? '';
    d.env = (server.secrets?.env ?? []).map((/** @type {string} */ key) => envRow({ key, stored: true }));
  }
  return d;
}

/** The draft with every typed secret value dropped (after a save). @param {Draft} d @returns {Draft} */
export function withoutSecrets(d) {
  return { ...d, bearer: '', headerValue: '', env: d.env.map((r) => ({ ...r, value: '' })) };
}

/**
 * What is wrong with a path field the user just left (`~`, which no shell
 * will expand; a working directory that is not a full path), or '': the
 * same words as the `/mcp` screen's (web/shared/labels.js).
 * @param {'cwd' | 'command'} field @param {string} text
 */
export const leftFieldProblem = (field, text) => (field === 'cwd' ? workingDirProblem(text) : commandTildeProblem(text));

/**
 * The draft's command line and working directory as a server saved them:
 * nothing to check again when neither changed (an entry written by hand may
 * hold what the form would not take).
 * @param {Draft} d @param {any} [server]
 */
const asSaved = (d, server) =>
  !!server && d.command === joinCommand(server.config.command ?? '', server.config.args ?? []) && d.cwd === (server.config.cwd ?? '');

/**
 * What is wrong with the draft before anything is sent (the daemon checks
 * everything again): empty url, command or name; a `~` in the command or
 * the working directory, a working directory that is not a full path, a
 * relative path in the command with no working directory; a header half
 * given; an env entry without a variable name, with a bad one, twice, or
 * without a value. `server`: the one edited (what it saved is not checked again).
 * @param {Draft} d @param {any} [server] @returns {Problems}
 */
export function checkDraft(d, server) {
  /** @type {Problems} */
  const p = {};
  if (d.transport === 'http' && !d.url.trim()) p.url = "Type the server's URL.";
  if (d.transport === 'stdio' && !d.command.trim()) p.command = 'Type the command that starts the server.';
  if (d.transport === 'stdio' && d.command.trim() && !asSaved(d, server)) {
    const tilde = commandTildeProblem(d.command);
    if (tilde) p.command = tilde;
    const cwd = workingDirProblem(d.cwd);
    const relative = relativePathWord(d.command);
    if (cwd) p.cwd = cwd;
    else if (!d.cwd.trim() && relative) {
      p.cwd = relativeWithoutCwdProblem(relative);
    }
  }
  if (!d.name.trim()) p.name = 'Give the server a name.';
  if (d.transport === 'http' && !d.removeHeader) {
    const name = d.headerName.trim();
    if (name && !HEADER_NAME.test(name)) p.headerName = 'A header name is letters, digits and - (no spaces or colon).';
    else if (d.headerValue && !name) p.headerName = 'Name the header this value is for.';
    else if (name && !d.headerValue && name !== d.storedHeader) p.headerValue = "Type the header's value.";
  }
  if (d.transport === 'stdio') {
    const seen = new Set();
    for (const r of d.env) {
      if (r.stored) {
        seen.add(r.key);
        continue;
      }
      const key = r.key.trim();
      if (!key && !r.value) continue;
      if (!VAR_NAME.test(key)) p[`env-${r.id}-key`] = 'A variable name is letters, digits and _, not starting with a digit.';
      else if (seen.has(key)) p[`env-${r.id}-key`] = `${key} is given twice.`;
      else if (!r.value) p[`env-${r.id}-value`] = 'Type the value (an empty value cannot be stored).';
      seen.add(key);
    }
  }
  return p;
}

/**
 * A command given as a relative path (`./server`, `build/server`) taken from
 * the working directory, as a shell there would, when there is one: the
 * `/mcp` screen and `albedo mcp add` save it so. A bare name is looked up on PATH.
 * @param {string} cwd @param {string} command
 */
export function inDir(cwd, command) {
  const dir = cwd.trim();
  if (!dir.startsWith('/') || !command.includes('/') || command.startsWith('/')) return command;
  /** @type {string[]} */
  const out = [];
  for (const part of `${dir}/${command}`.split('/')) {
    if (part === '..') out.pop();
    else if (part && part !== '.') out.push(part);
  }
  return `/${out.join('/')}`;
}

/** @param {Draft} d @param {boolean} editing */
function secretsOf(d, editing) {
  /** @type {Record<string, unknown>} */
  const s = {};
  if (d.transport === 'http') {
    if (editing && d.storedBearer && d.removeBearer) s.bearer = null;
    else if (d.bearer) s.bearer = d.bearer;
    const name = d.headerName.trim();
    if (editing && d.storedHeader !== null && d.removeHeader) s.header = null;
    else if (name && d.headerValue) s.header = { name, value: d.headerValue };
  } else {
    /** @type {Record<string, string | null>} */
    const env = {};
    for (const r of d.env) {
      if (r.stored && r.remove) env[r.key] = null;
      else if (r.value && r.key.trim()) env[r.key.trim()] = r.value;
    }
    if (Object.keys(env).length) s.env = env;
  }
  return s;
}

/**
 * The PUT body of a new server: the entry (url, or command and args as
 * the daemon split the line) and its secrets.
 * @param {Draft} d @param {{ command: string, args: string[] } | null} split
 * @returns {Record<string, unknown>}
 */
export function putBody(d, split) {
  /** @type {Record<string, unknown>} */
  const body = d.transport === 'http' ? { url: d.url.trim() } : { command: inDir(d.cwd, split?.command ?? ''), args: split?.args ?? [] };
  if (d.transport === 'stdio' && d.cwd.trim()) body.cwd = d.cwd.trim();
  const secrets = secretsOf(d, false);
  if (Object.keys(secrets).length) body.secrets = secrets;
  return body;
}

/**
 * The merge PATCH of an edit: only what changed (the url, the command and
 * args when the line splits differently from what is saved) and the
 * secrets to store or remove; an empty patch tries the server as it is.
 * @param {Draft} d @param {any} server the Server the form opened with
 * @param {{ command: string, args: string[] } | null} split null when the line is as saved
 * @returns {Record<string, unknown>}
 */
export function patchBody(d, server, split) {
  /** @type {Record<string, unknown>} */
  const body = {};
  const c = server.config;
  if (d.transport === 'http' && d.url.trim() !== c.url) body.url = d.url.trim();
  if (d.transport === 'stdio' && split) {
    const command = inDir(d.cwd, split.command);
    if (command !== c.command) body.command = command;
    if (JSON.stringify(split.args) !== JSON.stringify(c.args ?? [])) body.args = split.args;
  }
  // An emptied working directory removes it (merge patch): the server's own empty directory again.
  if (d.transport === 'stdio' && d.cwd.trim() !== (c.cwd ?? '')) body.cwd = d.cwd.trim() || null;
  const secrets = secretsOf(d, true);
  if (Object.keys(secrets).length) body.secrets = secrets;
  return body;
}

/**
 * The form field an API error's `path` names (`["body", "url"]`,
 * `["params", "name"]`, `["body", "secrets", "env", "KEY"]`, …), or null.
 * @param {Array<string | number>} path @param {Draft} d
 * @returns {string | null}
 */
export function fieldOfPath(path, d) {
  const [where, first, second, third] = path;
  if (where === 'params' && first === 'name') return 'name';
  if (where !== 'body') return null;
  if (first === 'url') return 'url';
  if (first === 'cwd') return 'cwd';
  if (first === 'command' || first === 'args' || first === 'line') return 'command';
  if (first !== 'secrets') return null;
  if (second === 'bearer') return 'bearer';
  if (second === 'header') return third === 'name' ? 'headerName' : 'headerValue';
  if (second === 'env') {
    const row = d.env.find((r) => r.key.trim() === third);
    return row ? `env-${row.id}-value` : null;
  }
  return null;
}

/**
 * What a problem is about in the draft, as text that changes when the user
 * changes it: a field's problem is stale once that field changes (the
 * working directory's also when the command changes, which it may be about;
 * a header's when either half changes).
 * @param {string} key @param {Draft} d
 */
function subject(key, d) {
  const row = /^env-(\d+)-(key|value)$/.exec(key);
  if (row) {
    const r = d.env.find((x) => x.id === Number(row[1]));
    return r ? JSON.stringify([r.key, r.value, r.remove]) : null;
  }
  switch (key) {
    case 'cwd':
      return JSON.stringify([d.cwd, d.command]);
    case 'bearer':
      return JSON.stringify([d.bearer, d.removeBearer]);
    case 'headerName':
    case 'headerValue':
      return JSON.stringify([d.headerName, d.headerValue, d.removeHeader]);
    default:
      return JSON.stringify(/** @type {Record<string, unknown>} */ (d)[key] ?? null);
  }
}

/**
 * The problems still standing after the draft went from `before` to
 * `after`: those of the fields that changed are dropped (all of them when
 * the transport changed); the rest stay until the next save checks again.
 * @param {Problems} problems @param {Draft} before @param {Draft} after
 * @returns {Problems}
 */
export function problemsAfter(problems, before, after) {
  if (before.transport !== after.transport) return {};
  return Object.fromEntries(Object.entries(problems).filter(([k]) => subject(k, before) === subject(k, after)));
}
