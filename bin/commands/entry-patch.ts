/**
 * `albedo mcp edit`: the JSON merge patch (RFC 7396) of a server's entry and
 * the secrets beside it, from the options and the server as the daemon
 * shows it now. A value moves between "named" and "typed" cleanly: setting
 * `--env TOKEN=value` over a named `TOKEN` removes the name from the entry,
 * and `'TOKEN=${VAR}'` over a stored TOKEN removes the stored one, so the
 * entry and its secrets never collide.
 */
import { usage } from '../client/errors.ts';
import { dict } from '../client/dict.ts';
import { touches, type EntryParts, type Secrets } from './entry.ts';
import { kindOf } from '../client/show.ts';

/** The part of the API's Server the patch needs. */
export interface CurrentServer {
  config: Record<string, any>;
  secrets: { bearer: boolean; header: string | null; env: string[] };
}

export interface Unsets {
  env: string[];
  header: string[];
}

const has = (o: unknown, k: string): boolean => !!o && typeof o === 'object' && Object.hasOwn(o, k);

/** The PATCH body: the merge patch of the entry, plus `secrets` when any changes. Throws a usage error when nothing would. */
export function patchBody(p: EntryParts, cur: CurrentServer, unset: Unsets): Record<string, unknown> {
  const kind = kindOf(cur.config);
  if (p.kind !== null && p.kind !== kind) {
    throw usage(`the server is a ${kind} server: to make it a ${p.kind} one, replace it (albedo mcp add NAME --replace …)`);
  }
  const t = touches(p);
  if (kind === 'http' && (t.stdio || unset.env.length)) throw usage('--env, --unset-env and --cwd are for a command (stdio) server');
  if (kind === 'stdio' && (t.http || unset.header.length))
    throw usage('--header, --header-from, --unset-header, --bearer-env and --bearer-from are for an http server');

  const patch: Record<string, unknown> = { ...p.fields };
  // Keyed by the user's names: without a prototype, so `__proto__` is a name like another.
  const env = dict<unknown>();
  const headers = dict<unknown>();
  const secrets: Secrets = {};
  const secretEnv = dict<string | null>();

  for (const [name, v] of Object.entries(p.named.env)) {
    if (v) {
      env[name] = v;
      if (cur.secrets.env.includes(name)) secretEnv[name] = null;
    } else if (has(cur.config.env, name)) env[name] = null;
  }
  for (const [name, v] of Object.entries(p.secrets.env ?? {})) if (v !== null) secretEnv[name] = v;
  for (const name of unset.env) {
    if (!has(cur.config.env, name) && !cur.secrets.env.includes(name))
      throw usage(`--unset-env ${name}: the server has no variable ${name}`);
    if (has(cur.config.env, name)) env[name] = null;
    if (cur.secrets.env.includes(name)) secretEnv[name] = null;
  }

  for (const [name, v] of Object.entries(p.named.headers)) {
    headers[name] = v;
    if (cur.secrets.header?.toLowerCase() === name.toLowerCase()) secrets.header = null;
  }
  if (p.secrets.header) {
    secrets.header = p.secrets.header;
    for (const name of Object.keys(cur.config.headers ?? {}))
      if (name.toLowerCase() === p.secrets.header.name.toLowerCase()) headers[name] = null;
  }
  if (p.secrets.bearer) {
    secrets.bearer = p.secrets.bearer;
    if (cur.config.bearerTokenEnvVar !== undefined) patch.bearerTokenEnvVar = null;
  } else if (typeof p.fields.bearerTokenEnvVar === 'string' && cur.secrets.bearer) secrets.bearer = null;
  for (const name of unset.header) {
    const lower = name.toLowerCase();
    const named = Object.keys(cur.config.headers ?? {}).filter((h) => h.toLowerCase() === lower);
    const auth = lower === 'authorization' && (cur.secrets.bearer || cur.config.bearerTokenEnvVar !== undefined);
    const typed = cur.secrets.header?.toLowerCase() === lower;
    if (!named.length && !auth && !typed) throw usage(`--unset-header ${name}: the server sends no header ${name}`);
    for (const h of named) headers[h] = null;
    if (typed) secrets.header = null;
    if (auth && cur.secrets.bearer) secrets.bearer = null;
    if (auth && cur.config.bearerTokenEnvVar !== undefined) patch.bearerTokenEnvVar = null;
  }

  if (Object.keys(env).length) patch.env = env;
  if (Object.keys(headers).length) patch.headers = headers;
  if (Object.keys(secretEnv).length) secrets.env = secretEnv;
  if (Object.keys(secrets).length) patch.secrets = secrets;
  if (!Object.keys(patch).length) throw usage('nothing to change: give at least one option (see albedo mcp edit --help)');
  return patch;
}
