/**
 * From the `/mcp` form to the request that saves it: a new server is one
 * `PUT` of its entry and its secrets together (`If-None-Match: *`); an
 * edited one a JSON merge patch of the entry plus `secrets` (`If-Match`
 * of the version the form was filled from). What a shell would do with the
 * command line (or with the env entries, typed as `KEY=value` words as a
 * shell reads them) is refused at its field and nothing is sent.
 *
 * The working directory is the `cwd` field: a full path, or empty for an
 * empty directory of the server's own (the daemon's default); a relative
 * program in the command line is made absolute against it, as a shell there
 * would. Empty, with a relative path in the command, is refused at the
 * field (it would find nothing there).
 *
 * On edit a secret field left blank keeps what is stored (nothing is sent
 * for it) and `-` removes it (`null`); env entries are `KEY=value` (set or
 * replace), `KEY=-` (remove that one) or a lone `-` (remove them all), in
 * either env field (`env` shows its values, `secret env` masks them; both
 * are stored by the daemon in creds.json).
 * Problems never quote a secret field's text: they name the field, the
 * entry's number or its KEY, never what was typed as a value.
 */
import path from 'node:path';
import { dict } from '../client/dict.ts';
import { splitCommandLine } from '../../protocol/command-line.ts';
import { commandTildeProblem, relativePathWord, relativeWithoutCwdProblem, workingDirProblem } from '../../web/shared/labels.js';
import type { FieldId, FormState } from './form-state.ts';

export type SaveRequest =
  | { method: 'PUT'; name: string; body: Record<string, unknown> }
  | { method: 'PATCH'; name: string; body: Record<string, unknown>; etag: string | null };

export type BuildResult = { request: SaveRequest } | { problems: Partial<Record<FieldId, string>> } | { unchanged: true };

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REMOVE = '-';
/** A value that is all `${NAME}`: the CLI's way to name a daemon variable, which the form (storing what is typed) does not take. */
const NAMED = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;
const NAMED_PROBLEM = 'the form stores the value as typed; to name a variable of the daemon instead, use albedo mcp edit (docs/cli.md)';

/** The server's URL, or a problem. */
function urlOf(text: string): string | { problem: string } {
  const t = text.trim();
  if (!t) return { problem: "give the server's URL (https://host/path)" };
  let u: URL;
  try {
    u = new URL(t);
  } catch {
    return { problem: 'this is not a URL: write it as https://host/path' };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return { problem: 'only http:// and https:// servers; a command is a stdio server (← → on transport)' };
  }
  return t;
}

/**
 * The command line split into the entry's command and args (a relative
 * program made absolute against the working directory `cwd`, as a shell
 * there would; left as typed without one), or a problem.
 */
function commandOf(text: string, cwd: string): { command: string; args: string[] } | { problem: string } {
  if (!text.trim()) return { problem: 'give the command that starts the server, as you would type it in a shell' };
  const tilde = commandTildeProblem(text);
  if (tilde) return { problem: tilde };
  const r = splitCommandLine(text, (name) => `put it in the env field (${name}=VALUE)`);
  if ('problem' in r) return r;
  const [first, ...args] = r.words;
  return { command: first!.includes('/') && cwd ? path.resolve(cwd, first!) : first!, args };
}

/**
 * The working directory field: '' (an empty directory of the server's own)
 * or a full path; a problem when it is not one, or when it is empty and the
 * command names a relative path. Not looked at (`check` false) when neither
 * it nor the command changed on an edit.
 */
function cwdOf(s: FormState, check: boolean): string | { problem: string } {
  const t = s.fields.cwd.text.trim();
  if (!check) return t;
  const bad = workingDirProblem(t);
  if (bad) return { problem: bad };
  const relative = t ? '' : relativePathWord(s.fields.command.text);
  return relative ? { problem: relativeWithoutCwdProblem(relative) } : t;
}

/**
 * A splitter's problem, with anything it quoted from the text cut out: the
 * env field's text is secret, and a problem may name a `$NAME`, an operator
 * or a pattern character found in it.
 */
function secretSafe(problem: string): string {
  return problem
    .replace(/\$[A-Za-z_][A-Za-z0-9_]*/g, 'a $variable')
    .replace(/the operator \S+/g, 'an operator')
    .replace(/so \S would not be expanded as a pattern/, 'so a pattern character (* ? [ {) would not be expanded');
}

type Env = { all: 'remove' } | { entries: Record<string, string | null> };

/** The env field: `KEY=value` words read as a shell reads them (quotes honoured), `KEY=-` removals, or a lone `-`. */
function envOf(text: string, edit: boolean): Env | { problem: string } {
  const t = text.trim();
  if (t === REMOVE && edit) return { all: 'remove' };
  // After `env`, as in a shell, `KEY=value` words are arguments, not assignments the splitter would refuse.
  const r = splitCommandLine(`env ${text}`, () => "single-quote it to keep the $ ('…')");
  if ('problem' in r) return { problem: secretSafe(r.problem) };
  const entries = dict<string | null>();
  const words = r.words.slice(1);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const eq = w.indexOf('=');
    const key = eq < 0 ? '' : w.slice(0, eq);
    const value = w.slice(eq + 1);
    if (!VAR_NAME.test(key)) return { problem: `entry ${i + 1} is not KEY=value (quote a value that holds spaces: KEY="a b")` };
    if (Object.hasOwn(entries, key)) return { problem: `${key} is given twice` };
    if (value === '') return { problem: `${key}: an empty value cannot be stored` };
    if (value === REMOVE && !edit) return { problem: `${key}=- removes a stored value; a new server has none` };
    entries[key] = value === REMOVE ? null : value;
  }
  return { entries };
}

/** Both env fields as one (`env` and `secret env`): a key given in both is a problem, and so is a lone `-` beside entries. */
function bothEnv(s: FormState, edit: boolean, problems: Partial<Record<FieldId, string>>): Env | null {
  const plain = envOf(s.fields.env.text, edit);
  const secret = envOf(s.fields.secretEnv.text, edit);
  if (isProblem(plain)) problems.env = plain.problem;
  if (isProblem(secret)) problems.secretEnv = secret.problem;
  if (isProblem(plain) || isProblem(secret)) return null;
  if ('all' in plain || 'all' in secret) {
    const other = 'all' in plain ? secret : plain;
    if ('entries' in other && Object.keys(other.entries).length) {
      problems['all' in plain ? 'env' : 'secretEnv'] = 'a lone - removes every entry: leave the other env field blank';
      return null;
    }
    return { all: 'remove' };
  }
  const entries = dict<string | null>();
  for (const [k, v] of Object.entries(plain.entries)) entries[k] = v;
  for (const [k, v] of Object.entries(secret.entries)) {
    if (Object.hasOwn(entries, k)) {
      problems.secretEnv = `${k} is given in both env fields`;
      return null;
    }
    entries[k] = v;
  }
  return { entries };
}

/** The header field: `Name: value`, `-`, or blank. */
function headerOf(text: string, edit: boolean): { name: string; value: string } | 'remove' | null | { problem: string } {
  const t = text.trim();
  if (!t) return null;
  if (t === REMOVE && edit) return 'remove';
  const colon = t.indexOf(':');
  const name = colon < 0 ? '' : t.slice(0, colon).trim();
  const value = colon < 0 ? '' : t.slice(colon + 1).trim();
  if (!HEADER_NAME.test(name) || !value) return { problem: 'write one header as Name: value' };
  if (/^authorization$/i.test(name)) return { problem: 'put the token in the bearer token field' };
  if (NAMED.test(value)) return { problem: NAMED_PROBLEM };
  return { name, value };
}

/** The bearer field: a token, `-`, or blank. */
function bearerOf(text: string, edit: boolean): string | 'remove' | null | { problem: string } {
  const t = text.trim();
  if (!t) return null;
  if (t === REMOVE && edit) return 'remove';
  if (/\s/.test(t)) return { problem: 'a bearer token holds no spaces (type the token alone, without "Bearer")' };
  if (NAMED.test(t)) return { problem: NAMED_PROBLEM };
  return t;
}

const isProblem = (v: unknown): v is { problem: string } => !!v && typeof v === 'object' && 'problem' in v;

/** The request that saves the form, the problems found at its fields (nothing to send), or `unchanged` (an edit that changes nothing). */
export function buildSave(s: FormState): BuildResult {
  return s.mode === 'new' ? buildPut(s) : buildPatch(s);
}

function buildPut(s: FormState): BuildResult {
  const problems: Partial<Record<FieldId, string>> = {};
  const name = s.fields.name.text.trim();
  if (!name) problems.name = 'give the server a name';
  const body: Record<string, unknown> = {};
  const secrets: Record<string, unknown> = {};
  if (s.transport === 'http') {
    const url = urlOf(s.fields.url.text);
    if (isProblem(url)) problems.url = url.problem;
    else body.url = url;
    const bearer = bearerOf(s.fields.bearer.text, false);
    if (isProblem(bearer)) problems.bearer = bearer.problem;
    else if (typeof bearer === 'string') secrets.bearer = bearer;
    const header = headerOf(s.fields.header.text, false);
    if (isProblem(header)) problems.header = header.problem;
    else if (header && header !== 'remove') secrets.header = header;
  } else {
    const cwd = cwdOf(s, true);
    if (isProblem(cwd)) problems.cwd = cwd.problem;
    const cmd = commandOf(s.fields.command.text, isProblem(cwd) ? '' : cwd);
    if (isProblem(cmd)) problems.command = cmd.problem;
    else Object.assign(body, cmd, !isProblem(cwd) && cwd ? { cwd } : {});
    const env = bothEnv(s, false, problems);
    if (env && 'entries' in env && Object.keys(env.entries).length) secrets.env = env.entries;
  }
  if (Object.keys(problems).length) return { problems };
  if (Object.keys(secrets).length) body.secrets = secrets;
  return { request: { method: 'PUT', name, body } };
}

function buildPatch(s: FormState): BuildResult {
  const cur = s.current!;
  const config = cur.server.config;
  const stored = cur.server.secrets;
  const problems: Partial<Record<FieldId, string>> = {};
  const patch: Record<string, unknown> = {};
  const secrets: Record<string, unknown> = {};
  const nothing = 'nothing is stored to remove';
  if (s.transport === 'http') {
    if (s.fields.url.text !== cur.prefill) {
      const url = urlOf(s.fields.url.text);
      if (isProblem(url)) problems.url = url.problem;
      else patch.url = url;
    }
    const bearer = bearerOf(s.fields.bearer.text, true);
    if (isProblem(bearer)) problems.bearer = bearer.problem;
    else if (bearer === 'remove') {
      if (!stored.bearer && !config.bearerTokenEnvVar) problems.bearer = nothing;
      if (stored.bearer) secrets.bearer = null;
      if (config.bearerTokenEnvVar) patch.bearerTokenEnvVar = null;
    } else if (bearer) {
      secrets.bearer = bearer;
      // A typed token over a named one replaces it: the entry and its secrets never both say Authorization.
      if (config.bearerTokenEnvVar) patch.bearerTokenEnvVar = null;
    }
    const header = headerOf(s.fields.header.text, true);
    if (isProblem(header)) problems.header = header.problem;
    else if (header === 'remove') {
      if (stored.header) secrets.header = null;
      else problems.header = nothing;
    } else if (header) {
      secrets.header = header;
      const named = Object.keys(config.headers ?? {}).filter((h) => h.toLowerCase() === header.name.toLowerCase());
      if (named.length) patch.headers = Object.fromEntries(named.map((h) => [h, null]));
    }
  } else {
    const changedCommand = s.fields.command.text !== cur.prefill;
    const changedCwd = s.fields.cwd.text.trim() !== cur.prefillCwd;
    const cwd = cwdOf(s, changedCommand || changedCwd);
    if (isProblem(cwd)) problems.cwd = cwd.problem;
    // Emptied: removed (merge patch), so the server runs in an empty directory of its own again.
    else if (changedCwd) patch.cwd = cwd || null;
    if (changedCommand) {
      const cmd = commandOf(s.fields.command.text, isProblem(cwd) ? '' : cwd);
      if (isProblem(cmd)) problems.command = cmd.problem;
      else Object.assign(patch, cmd);
    }
    const env = bothEnv(s, true, problems);
    const named = Object.keys(config.env ?? {});
    const secretEnv = dict<string | null>();
    const entryEnv = dict<null>();
    // No env (a problem, said at its field): nothing to send for it.
    if (env && 'all' in env) {
      if (!stored.env.length && !named.length) problems.env = nothing;
      for (const k of stored.env) secretEnv[k] = null;
      for (const k of named) entryEnv[k] = null;
    } else if (env) {
      for (const [k, v] of Object.entries(env.entries)) {
        if (v === null && !stored.env.includes(k) && !named.includes(k)) problems.env = `${k}=-: the server has no variable ${k}`;
        if (v !== null || stored.env.includes(k)) secretEnv[k] = v;
        if (named.includes(k)) entryEnv[k] = null;
      }
    }
    if (Object.keys(secretEnv).length) secrets.env = secretEnv;
    if (Object.keys(entryEnv).length) patch.env = entryEnv;
  }
  if (Object.keys(problems).length) return { problems };
  if (Object.keys(secrets).length) patch.secrets = secrets;
  if (!Object.keys(patch).length) return { unchanged: true };
  return { request: { method: 'PATCH', name: cur.server.name, body: patch, etag: cur.etag } };
}
