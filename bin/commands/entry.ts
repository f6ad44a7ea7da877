/**
 * From `albedo mcp add|edit` options to what the API takes: a server entry
 * as extensions.json has it, and the typed secrets beside it.
 *
 * One rule for every value: a literal value is a secret typed by the user
 * and goes to the API's `secrets` (creds.json, never extensions.json);
 * `${VAR}` names a variable of the daemon, and only the name is saved
 * (`{ "env": "VAR" }`, `bearerTokenEnvVar`). `--command` is split by shell
 * quoting rules (shell-quote), but no shell ever runs: operators, globs and
 * variables are refused rather than silently taken literally.
 */
import path from 'node:path';
import { dict } from '../client/dict.ts';
import { usage } from '../client/errors.ts';
import { namedForDaemon, readPrivately } from '../client/private-env.ts';
import { splitCommandLine } from '../../protocol/command-line.ts';

/** The API's typed secrets of a write (docs/api.md "Secrets"); null removes, absent keeps. */
export interface Secrets {
  bearer?: string | null;
  header?: { name: string; value: string } | null;
  env?: Record<string, string | null>;
  oauth?: null;
}

export type Named = { env: string };

/** The options add and edit share (commander's camel-cased values). */
export interface EntryOptions {
  url?: string;
  header?: string[];
  bearerEnv?: string;
  /** VAR of this command's environment, or `-` (stdin): the bearer token, stored as a secret. */
  bearerFrom?: string;
  /** `Name=VAR` or `Name=-`: a header whose value comes from this command's environment or stdin, stored as a secret. */
  headerFrom?: string;
  command?: string;
  env?: string[];
  cwd?: string;
  startupTimeout?: string;
  callTimeout?: string;
}

/** What the options say about the server: fields of the entry, and secrets. */
export interface EntryParts {
  kind: 'http' | 'stdio' | null;
  fields: Record<string, unknown>;
  /** env / headers entries: a named variable, or null to remove (edit). */
  named: { env: Record<string, Named | null>; headers: Record<string, Named | null> };
  secrets: Secrets;
}

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A name as environment variables are conventionally named: only such a name is echoed in an error (not `ghp_x1…`, a token). */
const SHOWN_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** `name` when it looks like a variable's name, else `instead` (or nothing): a value typed by mistake is never echoed. */
function shown(name: string, instead = ''): string {
  return SHOWN_NAME.test(name) ? name : instead;
}
/** `${VAR}`, the whole value. */
const WHOLE_VAR = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** `${VAR}` → VAR, else null; a value that holds `${…}` among other text is refused (only whole values can be named). */
export function namedVar(value: string, what: string): string | null {
  const m = WHOLE_VAR.exec(value);
  if (m) {
    namedForDaemon(m[1]!);
    return m[1]!;
  }
  if (/\$\{[^}]*\}/.test(value))
    throw usage(`${what}: \${VAR} must be the whole value (the daemon reads the variable; it does not expand text)`);
  return null;
}

/** Splits `--command` by shell quoting rules; no shell runs, so what only a shell would do is refused (exit 2). */
export function splitCommand(text: string): string[] {
  const r = splitCommandLine(text, (name) => `pass it with --env ${name}=VALUE`);
  if ('problem' in r) throw usage(`--command: ${r.problem}`);
  return r.words;
}

function timeout(v: string | undefined, option: string, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > max)
    throw usage(`${option} must be a whole number of milliseconds from 1 to ${max}, not ${JSON.stringify(v)}`);
  return n;
}

/** `NAME=VALUE`, `NAME=${VAR}` or `NAME` (the value of NAME in this command's environment). */
function envOption(raw: string, parts: EntryParts): void {
  const eq = raw.indexOf('=');
  const name = eq < 0 ? raw : raw.slice(0, eq);
  // Not echoed: a value typed where the name goes (`--env sk-…`) would go to the terminal and its logs.
  if (!VAR_NAME.test(name)) throw usage('--env: expected NAME=VALUE or NAME, with a variable name (what was given is not shown)');
  if (eq < 0 && Object.hasOwn(process.env, name)) readPrivately(name);
  const value = eq < 0 ? (Object.hasOwn(process.env, name) ? process.env[name] : undefined) : raw.slice(eq + 1);
  if (value === undefined)
    throw usage(`--env ${shown(name)}: ${shown(name, 'the variable')} is not set in this environment (write NAME=VALUE)`);
  const v = namedVar(value, `--env ${name}`);
  if (v !== null) {
    parts.named.env[name] = { env: v };
    (parts.secrets.env ??= dict())[name] = null;
  } else {
    // A blank secret means "keep the stored one" to the API: an empty value cannot be stored.
    if (value === '') throw usage(`--env ${name}: an empty value cannot be stored`);
    (parts.secrets.env ??= dict())[name] = value;
    parts.named.env[name] = null;
  }
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** `Name: value`: Authorization: Bearer … is the bearer secret; one other literal header is the header secret; `${VAR}` is named. */
function headerOption(raw: string, parts: EntryParts): void {
  const colon = raw.indexOf(':');
  const name = colon < 0 ? '' : raw.slice(0, colon).trim();
  const value = colon < 0 ? '' : raw.slice(colon + 1).trim();
  // The name only, and only when it is one: `--header sk-…` (a value alone) is not echoed.
  if (!HEADER_NAME.test(name) || !value) throw usage(`--header${HEADER_NAME.test(name) ? ` ${name}` : ''}: expected 'Name: value'`);
  headerValue(name, value, parts, true);
}

/** A header's value; `mayName`: `${VAR}` names the daemon's variable (not for a value read from here, which is always literal). */
function headerValue(name: string, value: string, parts: EntryParts, mayName: boolean): void {
  const bearer = /^authorization$/i.test(name) ? /^Bearer\s+(\S+)$/i.exec(value) : null;
  if (bearer) {
    const v = mayName ? namedVar(bearer[1]!, '--header Authorization') : null;
    if (v !== null) parts.fields.bearerTokenEnvVar = v;
    else parts.secrets.bearer = bearer[1]!;
    return;
  }
  const v = mayName ? namedVar(value, `--header ${name}`) : null;
  if (v !== null) {
    parts.named.headers[name] = { env: v };
    return;
  }
  if (parts.secrets.header)
    throw usage(`--header ${name}: only one header value can be stored as a secret; name the others' variables with 'Name: \${VAR}'`);
  parts.secrets.header = { name, value };
}

/** Values read by `--bearer-from` and `--header-from` (privateValues): never on the command line. */
export interface PrivateValues {
  bearer?: string;
  header?: { name: string; value: string };
}

/** The most a value read from stdin may hold: a token or a header value, not a file. */
const MAX_STDIN = 64 * 1024;

/** One value from stdin: on a terminal, asked for without echo; otherwise all of it, one trailing line break dropped. */
async function fromStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) {
    const { ask } = await import('../import/prompt.ts');
    return ask(`${what} (not shown): `, true).catch(() => {
      throw usage(`${what}: nothing was typed (cancelled)`);
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_STDIN) throw usage(`${what}: more than ${MAX_STDIN} bytes on stdin`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * VAR's value in this command's environment (a missing one is exit 2), or
 * stdin's for `-`. `option` names the flag, never the source: a careless
 * user may have typed the secret itself where VAR goes, and errors name the
 * variable only when it looks like one (`shown`).
 */
async function fromHere(source: string, option: string, what: string, trim = false): Promise<string> {
  let value: string | undefined;
  if (source === '-') value = await fromStdin(what);
  else {
    if (!VAR_NAME.test(source))
      throw usage(`${option}: expected a variable name or - (stdin); what was given is not a variable name (not shown)`);
    value = Object.hasOwn(process.env, source) ? process.env[source] : undefined;
    if (value === undefined) throw usage(`${option}: ${shown(source, 'the variable named')} is not set in this environment`);
    readPrivately(source);
  }
  if (trim) value = value.trim();
  // A blank secret means "keep the stored one" to the API: an empty value cannot be stored.
  if (value === '') throw usage(`${option}: an empty value cannot be stored`);
  return value;
}

/**
 * Reads what `--bearer-from` and `--header-from` name, before anything is
 * sent: from this command's environment (readable only by its user and
 * root, through /proc/PID/environ) or stdin — never an argument, which
 * every local user can read in /proc/PID/cmdline while the command runs.
 */
export async function privateValues(o: EntryOptions): Promise<PrivateValues> {
  const out: PrivateValues = {};
  let h: { name: string; source: string } | undefined;
  if (o.headerFrom !== undefined) {
    const eq = o.headerFrom.indexOf('=');
    h = { name: o.headerFrom.slice(0, Math.max(eq, 0)), source: o.headerFrom.slice(eq + 1) };
    // Not echoed: `--header-from 'X-Key: value'` holds the value.
    if (eq < 0 || !HEADER_NAME.test(h.name))
      throw usage('--header-from: expected Name=VAR or Name=- (stdin), a header name and a variable name (what was given is not shown)');
  }
  if (o.bearerFrom === '-' && h?.source === '-')
    throw usage('--bearer-from - and --header-from Name=-: only one value can be read from stdin');
  if (o.bearerFrom !== undefined) {
    out.bearer = await fromHere(o.bearerFrom, '--bearer-from', 'bearer token');
    if (/\s/.test(out.bearer)) throw usage('--bearer-from: the token holds whitespace (give the token alone, without "Bearer")');
  }
  if (h) out.header = { name: h.name, value: await fromHere(h.source, `--header-from ${h.name}`, `value of the header ${h.name}`, true) };
  return out;
}

/**
 * The entry parts `o` and the words after `--` describe. `kind` is null
 * when neither a URL nor a command was given (an edit of other fields).
 */
export function entryParts(o: EntryOptions, argv: string[] | null, given: PrivateValues = {}): EntryParts {
  const parts: EntryParts = { kind: null, fields: {}, named: { env: dict(), headers: dict() }, secrets: {} };
  const stdio = o.command !== undefined || argv !== null;
  if (o.url !== undefined && stdio)
    throw usage('give either --url (an http server) or a command (--command, or -- COMMAND ARGS), not both');
  if (o.command !== undefined && argv !== null) throw usage('give the command either with --command or after --, not both');
  if (o.url !== undefined) {
    parts.kind = 'http';
    parts.fields.url = o.url;
  } else if (stdio) {
    parts.kind = 'stdio';
    const words = argv ?? splitCommand(o.command!);
    if (!words.length || !words[0]) throw usage('no command after --');
    // A relative path to an executable is this command's, not the daemon's: made absolute. A bare name is looked up on PATH.
    const command = words[0].includes('/') ? path.resolve(words[0]) : words[0];
    parts.fields.command = command;
    parts.fields.args = words.slice(1);
  }
  if (o.cwd !== undefined) parts.fields.cwd = path.resolve(o.cwd);
  const st = timeout(o.startupTimeout, '--startup-timeout', 600_000);
  if (st !== undefined) parts.fields.startupTimeoutMs = st;
  const ct = timeout(o.callTimeout, '--call-timeout', 3_600_000);
  if (ct !== undefined) parts.fields.callTimeoutMs = ct;
  if (o.bearerEnv !== undefined) {
    if (!VAR_NAME.test(o.bearerEnv)) throw usage(`--bearer-env ${JSON.stringify(o.bearerEnv)}: expected a variable name`);
    parts.fields.bearerTokenEnvVar = o.bearerEnv;
    namedForDaemon(o.bearerEnv);
  }
  for (const h of o.header ?? []) headerOption(h, parts);
  if (given.bearer !== undefined) parts.secrets.bearer = given.bearer;
  if (given.header) headerValue(given.header.name, given.header.value, parts, false);
  for (const e of o.env ?? []) envOption(e, parts);
  return parts;
}

/** Whether the parts touch http fields, stdio fields. */
export function touches(p: EntryParts): { http: boolean; stdio: boolean } {
  const f = p.fields;
  return {
    http:
      'url' in f || 'bearerTokenEnvVar' in f || Object.keys(p.named.headers).length > 0 || 'bearer' in p.secrets || 'header' in p.secrets,
    stdio: 'command' in f || 'cwd' in f || Object.keys(p.named.env).length > 0 || 'env' in p.secrets,
  };
}

/** A whole entry for a PUT (add): the fields, the named variables, and the secrets to store with it. */
export function putBody(p: EntryParts, enabled: boolean): Record<string, unknown> {
  const t = touches(p);
  // Relative paths in the command line mean this directory, as they would in a shell here (the daemon's default is an empty
  // directory of the server's own, outside $ALBEDO_HOME).
  if (p.kind === 'stdio' && p.fields.cwd === undefined) p.fields.cwd = process.cwd();
  if (p.kind === 'http' && t.stdio) throw usage('--env and --cwd are for a command (stdio) server, not one with --url');
  if (p.kind === 'stdio' && t.http)
    throw usage('--header, --header-from, --bearer-env and --bearer-from are for an http server (--url), not a command');
  const body: Record<string, unknown> = { ...p.fields };
  const env = Object.fromEntries(Object.entries(p.named.env).filter(([, v]) => v !== null));
  const headers = Object.fromEntries(Object.entries(p.named.headers).filter(([, v]) => v !== null));
  if (Object.keys(env).length) body.env = env;
  if (Object.keys(headers).length) body.headers = headers;
  if (!enabled) body.enabled = false;
  const secrets: Secrets = {};
  if (p.secrets.bearer) secrets.bearer = p.secrets.bearer;
  if (p.secrets.header) secrets.header = p.secrets.header;
  const secretEnv = Object.fromEntries(Object.entries(p.secrets.env ?? {}).filter(([, v]) => v !== null));
  if (Object.keys(secretEnv).length) secrets.env = secretEnv as Record<string, string>;
  if (Object.keys(secrets).length) body.secrets = secrets;
  return body;
}
