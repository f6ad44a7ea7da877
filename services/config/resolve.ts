/**
 * Turns a server config as given (embedding API, config file) into what the
 * transport spawns: validated, secrets looked up, environment reduced,
 * working directory checked. Bad input is refused here, before any process
 * starts, with an error that names the field.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AlbedoError } from '../../protocol/errors.ts';
import {
  serverConfigSchema,
  oauthConfigSchema,
  describeZodError,
  serverNameProblem,
  type ResolvedServer,
  type ResolvedHttpServer,
  type ResolvedOAuth,
  type ServerConfig,
  type HttpServerConfig,
  type OAuthConfig,
} from '../../protocol/config.ts';

/** Where an HTTP server's OAuth credentials live: its name (`mcp.<name>.oauth`) and creds.json (null: memory). */
export interface AuthBinding {
  name: string;
  credsPath: string | null;
}

/** The only variables of the daemon's environment a stdio server inherits. */
export const INHERITED_ENV = ['HOME', 'PATH', 'TMPDIR'] as const;

export function parseServerConfig(input: unknown): ServerConfig {
  const r = serverConfigSchema.safeParse(input);
  if (!r.success)
    throw new AlbedoError('ALBEDO_INVALID_CONFIG', `invalid server config: ${describeZodError(r.error)}`, { outcome: 'not_run' });
  return r.data;
}

/**
 * The server as the transport receives it. With a binding (the server's
 * name), the name is checked first: `__proto__`, `constructor` and
 * `prototype` are refused with ALBEDO_INVALID_CONFIG, whatever the type and
 * whether given or derived from the URL.
 */
export function resolveServer(
  config: ServerConfig,
  daemonEnv: NodeJS.ProcessEnv = process.env,
  baseDir = process.cwd(),
  binding?: AuthBinding,
): ResolvedServer {
  const nameProblem = binding ? serverNameProblem(binding.name) : undefined;
  if (nameProblem) throw new AlbedoError('ALBEDO_INVALID_CONFIG', nameProblem, { outcome: 'not_run' });
  if (config.type === 'http') return resolveHttp(config, daemonEnv, binding, baseDir);
  const env: Record<string, string> = {};
  for (const k of INHERITED_ENV) {
    const v = daemonEnv[k];
    if (v !== undefined) env[k] = v;
  }
  for (const [name, value] of Object.entries(config.env)) {
    if (typeof value === 'string') env[name] = value;
    else {
      const v = daemonEnv[value.env];
      if (v === undefined) {
        const why = `env.${name} names the environment variable ${value.env}, which is not set`;
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
      }
      env[name] = v;
    }
  }
  const cwd = path.resolve(baseDir, config.cwd ?? '.');
  let isDir = false;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir)
    throw new AlbedoError('ALBEDO_INVALID_CONFIG', `cwd ${JSON.stringify(cwd)} is not an existing directory`, { outcome: 'not_run' });
  if (config.command.includes('\0') || config.args.some((a) => a.includes('\0'))) {
    throw new AlbedoError('ALBEDO_INVALID_CONFIG', 'command and args must not contain NUL bytes', { outcome: 'not_run' });
  }
  // What identifies the server for cached verdicts: everything that changes what runs, values hashed.
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify({
        type: 'stdio',
        command: config.command,
        args: config.args,
        cwd,
        env: Object.entries(env).sort(([a], [b]) => (a < b ? -1 : 1)),
      }),
    )
    .digest('hex');
  return {
    type: 'stdio',
    command: config.command,
    args: config.args,
    cwd,
    env,
    startupTimeoutMs: config.startupTimeoutMs,
    callTimeoutMs: config.callTimeoutMs,
    fingerprint,
  };
}

/** Header values looked up (literal or named variable), a bearer token from bearerTokenEnvVar; values are never echoed in errors. */
function resolveHttp(
  config: HttpServerConfig,
  daemonEnv: NodeJS.ProcessEnv,
  binding: AuthBinding | undefined,
  baseDir: string,
): ResolvedHttpServer {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers)) {
    const v = typeof value === 'string' ? value : daemonEnv[value.env];
    if (v === undefined) {
      const why = `headers.${name} names the environment variable ${(value as { env: string }).env}, which is not set`;
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
    }
    if (/[\r\n\0]/.test(v))
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', `headers.${name}: the value contains a line break or NUL`, { outcome: 'not_run' });
    headers[name] = v;
  }
  if (config.bearerTokenEnvVar) {
    const token = daemonEnv[config.bearerTokenEnvVar];
    if (!token) {
      const why = `bearerTokenEnvVar names the environment variable ${config.bearerTokenEnvVar}, which is not set or empty`;
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
    }
    if (/[\s\0]/.test(token)) {
      const why = `bearerTokenEnvVar: the token in ${config.bearerTokenEnvVar} contains whitespace`;
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
    }
    headers.Authorization = `Bearer ${token}`;
  }
  const fingerprint = createHash('sha256')
    .update(
      JSON.stringify({
        type: 'http',
        url: config.url,
        headers: Object.keys(headers)
          .map((h) => h.toLowerCase())
          .sort(),
      }),
    )
    .digest('hex');
  // OAuth unless the config fixes the Authorization header itself.
  const fixedAuth = Object.keys(headers).some((h) => h.toLowerCase() === 'authorization');
  const auth =
    binding && !fixedAuth ? { ...binding, oauth: resolveOAuth(config.oauth ?? oauthConfigSchema.parse({}), daemonEnv, baseDir) } : null;
  return {
    type: 'http',
    url: config.url,
    headers,
    startupTimeoutMs: config.startupTimeoutMs,
    callTimeoutMs: config.callTimeoutMs,
    fingerprint,
    auth,
  };
}

/** OAuth secrets looked up: an environment variable or a file's contents (trailing newline dropped); never echoed. */
export function resolveOAuth(o: OAuthConfig, daemonEnv: NodeJS.ProcessEnv = process.env, baseDir = process.cwd()): ResolvedOAuth {
  const secret = (field: string, v: string | { env: string } | { file: string } | undefined): string | undefined => {
    if (v === undefined || typeof v === 'string') return v;
    if ('env' in v) {
      const x = daemonEnv[v.env];
      if (!x) {
        const why = `oauth.${field} names the environment variable ${v.env}, which is not set or empty`;
        throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
      }
      return x;
    }
    const file = path.resolve(baseDir, v.file);
    try {
      const x = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
      if (!x) throw new Error('the file is empty');
      return x;
    } catch (err) {
      const why = `oauth.${field}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      throw new AlbedoError('ALBEDO_INVALID_CONFIG', why, { outcome: 'not_run' });
    }
  };
  const out: ResolvedOAuth = { grant: o.grant, dpop: o.dpop, callbackPort: o.callbackPort };
  if (o.clientId) out.clientId = o.clientId;
  const cs = secret('clientSecret', o.clientSecret);
  if (cs) out.clientSecret = cs;
  const pk = secret('privateKey', o.privateKey);
  if (pk) out.privateKey = pk;
  if (o.signingAlg) out.signingAlg = o.signingAlg;
  if (o.clientMetadataUrl) out.clientMetadataUrl = o.clientMetadataUrl;
  const a = secret('assertion', o.assertion);
  if (a) out.assertion = a;
  if (o.idp) out.idp = { tokenEndpoint: o.idp.tokenEndpoint, clientId: o.idp.clientId, idToken: secret('idp.idToken', o.idp.idToken)! };
  if (o.scope) out.scope = o.scope;
  return out;
}
