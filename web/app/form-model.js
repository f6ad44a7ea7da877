/// <reference lib="dom" />
// The server form's data, apart from how it looks: a draft made from a
// saved server (or empty), the checks made before anything is sent, and the
// PUT (add) or merge-PATCH (edit) body the settings API takes (docs/api.md
// "Settings routes", "Secrets"). Secrets follow the API's rules: a value
// stores it, null removes the stored one, left out keeps it.

import { transportOf } from '../shared/labels.js';

/** @typedef {{ id: number, key: string, value: string, stored: boolean, remove: boolean }} EnvRow */
/**
 * @typedef {object} Draft
 * @property {'http' | 'stdio'} transport
 * @property {string} url
 * @property {string} command the command line as typed
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
export const envRow = (o = {}) => ({ id: nextId++, key: '', value: '', stored: false, remove: false, ...o });

/** The form of a new server: http, nothing typed. @returns {Draft} */
export function emptyDraft() {
  return {
    transport: 'http', url: '', command: '', name: '', nameEdited: false,
    bearer: '', storedBearer: false, removeBearer: false,
    headerName: '', headerValue: '', storedHeader: null, removeHeader: false,
    env: [], named: [],
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
  const namedOf = (table) => Object.entries(table ?? {}).flatMap(([k, v]) => {
    const name = v && typeof v === 'object' ? /** @type {{ env?: unknown }} */ (v).env : undefined;
    return typeof name === 'string' ? [/** @type {[string, string]} */ ([k, name])] : [];
  });
  if (transport === 'http') {
    d.named = [...(c.bearerTokenEnvVar ? [/** @type {[string, string]} */ (['Authorization: Bearer', c.bearerTokenEnvVar])] : []), ...namedOf(c.headers)];
    d.url = c.url ?? '';
    d.storedBearer = !!server.secrets?.bearer;
    d.storedHeader = server.secrets?.header ?? null;
    d.headerName = d.storedHeader ?? '';
  } else {
    d.named = namedOf(c.env);
    d.command = joinCommand(c.command ?? '', c.args ?? []);
    d.env = (server.secrets?.env ?? []).map((/** @type {string} */ key) => envRow({ key, stored: true }));
  }
  return d;
}

/** The draft with every typed secret value dropped (after a save). @param {Draft} d @returns {Draft} */
export function withoutSecrets(d) {
  return { ...d, bearer: '', headerValue: '', env: d.env.map((r) => ({ ...r, value: '' })) };
}

/**
 * What is wrong with the draft before anything is sent (the daemon checks
 * everything again): empty url, command or name; a header half given; an
 * env entry without a variable name, with a bad one, twice, or without a value.
 * @param {Draft} d @returns {Problems}
 */
export function checkDraft(d) {
  /** @type {Problems} */
  const p = {};
  if (d.transport === 'http' && !d.url.trim()) p.url = 'Type the server\'s URL.';
  if (d.transport === 'stdio' && !d.command.trim()) p.command = 'Type the command that starts the server.';
  if (!d.name.trim()) p.name = 'Give the server a name.';
  if (d.transport === 'http' && !d.removeHeader) {
    const name = d.headerName.trim();
    if (name && !HEADER_NAME.test(name)) p.headerName = 'A header name is letters, digits and - (no spaces or colon).';
    else if (d.headerValue && !name) p.headerName = 'Name the header this value is for.';
    else if (name && !d.headerValue && name !== d.storedHeader) p.headerValue = 'Type the header\'s value.';
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
  const body = d.transport === 'http' ? { url: d.url.trim() } : { command: split?.command, args: split?.args ?? [] };
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
    if (split.command !== c.command) body.command = split.command;
    if (JSON.stringify(split.args) !== JSON.stringify(c.args ?? [])) body.args = split.args;
  }
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
