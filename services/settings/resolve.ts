/**
 * A server of extensions.json resolved into the transport's form
 * (protocol/config.ts ResolvedServer): named secrets looked up, typed
 * secrets from creds.json merged in, then services/config/resolve.ts's resolveServer —
 * the same checks `connect()` makes — and the fingerprint. Every failure is
 * ALBEDO_INVALID_CONFIG with `data: { server, path, reason }`; a value is
 * never put in an error.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { AlbedoError } from '../../protocol/errors.ts';
import { oauthConfigSchema, httpServerSchema, describeZodError, type ResolvedServer, type ServerConfig } from '../../protocol/config.ts';
import type { NamedSecret, ResolveProblem, ResolveReason, SettingsServer, StoredSecrets } from '../../protocol/settings.ts';
import type { ResolvedSettingsServer, ServerResolution } from '../../protocol/services/settings.ts';
import { resolveServer } from '../config/resolve.ts';
import { fingerprintOf, signInIdentity } from './fingerprint.ts';
import { exposureWarnings, neutralCwd } from './working-dir.ts';
import type { CredsSnapshot } from './secrets.ts';

/** A `{ file }` secret larger than this is refused (a PEM key is a few KiB; this keeps `/dev/zero` from being read). */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

export interface ResolveEnv {
  /** Relative `cwd` and `{ file }` paths are taken from here: the directory of extensions.json. */
  home: string;
  /** creds.json: its record of each server is `mcp.<name>`. */
  credsPath: string;
  /** The daemon's environment, where `{ env }` secrets are looked up. */
  env: NodeJS.ProcessEnv;
  creds: CredsSnapshot;
}

export function problemError(p: ResolveProblem): AlbedoError {
  return new AlbedoError('ALBEDO_INVALID_CONFIG', `${p.server}: ${p.path.length ? `${p.path.join('.')}: ` : ''}${p.message}`, {
    outcome: 'not_run',
    data: { server: p.server, path: p.path, reason: p.reason },
  });
}

/** The problem an error from resolveSettingsServer carries (for listings of many servers). */
export function problemOf(err: unknown, server: string): ResolveProblem {
  const d = AlbedoError.is(err) ? (err.data as Partial<ResolveProblem> | undefined) : undefined;
  return { server, path: d?.path ?? [], reason: d?.reason ?? 'invalid', message: AlbedoError.is(err) ? err.message : 'cannot be resolved' };
}

class Resolver {
  readonly #name: string;
  readonly #ctx: ResolveEnv;

  constructor(name: string, ctx: ResolveEnv) {
    this.#name = name;
    this.#ctx = ctx;
  }

  fail(path: Array<string | number>, reason: ResolveReason, message: string): never {
    throw problemError({ server: this.#name, path, reason, message });
  }

  /**
   * A named secret's value: the variable (unset → missing_env; empty refused when `required`) or
   * the file's contents, trailing newline dropped.
   */
  named(where: Array<string | number>, ref: NamedSecret, required = false): string {
    if ('env' in ref) {
      const v = this.#ctx.env[ref.env];
      if (v === undefined || (required && v === '')) {
        this.fail(where, 'missing_env', `the environment variable ${ref.env} is not set${required ? ' or empty' : ''}`);
      }
      return v;
    }
    const file = path.resolve(this.#ctx.home, ref.file);
    let fd: number;
    try {
      // Non-blocking, so a FIFO named by mistake cannot hang the service.
      fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return this.fail(where, code === 'ENOENT' ? 'missing_file' : 'unreadable_file', `cannot read ${file}: ${code ?? 'error'}`);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) this.fail(where, 'unreadable_file', `${file} is not a regular file`);
      if (st.size > MAX_SECRET_FILE_BYTES) this.fail(where, 'file_too_large', `${file} is over ${MAX_SECRET_FILE_BYTES} bytes`);
      const buf = Buffer.alloc(st.size);
      let n = 0;
      while (n < buf.length) {
        const r = readSync(fd, buf, n, buf.length - n, n);
        if (r === 0) break;
        n += r;
      }
      const v = buf
        .subarray(0, n)
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (!v) this.fail(where, 'empty_file', `${file} is empty`);
      return v;
    } finally {
      closeSync(fd);
    }
  }

  /** The empty directory of its own a server saved without `cwd` runs in (working-dir.ts). */
  neutral(): string {
    try {
      return neutralCwd(this.#ctx.home, this.#name);
    } catch (err) {
      return this.fail(['cwd'], 'missing_cwd', `no working directory of its own: ${(err as Error).message}`);
    }
  }

  stored(): StoredSecrets | undefined {
    try {
      return this.#ctx.creds.secrets(this.#name);
    } catch (err) {
      return this.fail([], 'invalid_credentials', (err as Error).message);
    }
  }

  /** The config protocol/config.ts describes, every secret a literal, typed secrets merged in. */
  config(entry: SettingsServer): ServerConfig {
    const s = this.stored();
    if (entry.type === 'stdio') {
      if (s?.bearerToken || s?.header || s?.oauthClient)
        this.fail([], 'conflict', 'the stored secrets are for an http server; save the server again');
      const env: Record<string, string> = {};
      for (const [k, ref] of Object.entries(entry.env)) env[k] = this.named(['env', k], ref);
      for (const [k, v] of Object.entries(s?.env ?? {})) {
        if (Object.hasOwn(env, k)) this.fail(['env', k], 'conflict', `env.${k} is both named in the file and stored in creds.json`);
        env[k] = v;
      }
      const cwd = entry.cwd === undefined ? this.neutral() : path.resolve(this.#ctx.home, entry.cwd);
      let isDir = false;
      try {
        isDir = statSync(cwd).isDirectory();
      } catch {
        isDir = false;
      }
      if (!isDir) this.fail(['cwd'], 'missing_cwd', `${cwd} is not an existing directory`);
      const { command, args, isolate, startupTimeoutMs, callTimeoutMs } = entry;
      return { type: 'stdio', command, args, cwd, env, isolate, startupTimeoutMs, callTimeoutMs };
    }
    if (s?.env) this.fail([], 'conflict', 'the stored secrets are for a stdio server; save the server again');
    if (s && s.url !== entry.url) {
      this.fail(
        ['url'],
        'credentials_for_other_url',
        'the secrets stored for this server were saved for another URL and are not sent to this one; save the server again',
      );
    }
    const headers: Record<string, string> = {};
    for (const [k, ref] of Object.entries(entry.headers)) headers[k] = this.named(['headers', k], ref as NamedSecret);
    if (s?.header) {
      if (Object.keys(headers).some((h) => h.toLowerCase() === s.header!.name.toLowerCase())) {
        this.fail(['headers', s.header.name], 'conflict', `the header ${s.header.name} is both named in the file and stored in creds.json`);
      }
      headers[s.header.name] = s.header.value;
    }
    if (s?.bearerToken) headers.Authorization = `Bearer ${s.bearerToken}`;
    if (entry.bearerTokenEnvVar) this.named(['bearerTokenEnvVar'], { env: entry.bearerTokenEnvVar }, true);
    let oauth = entry.oauth;
    if (oauth || s?.oauthClient) {
      const o = { ...(oauth ?? {}) } as Record<string, unknown>;
      for (const f of ['clientSecret', 'privateKey', 'assertion'] as const) {
        const v = oauth?.[f];
        if (v !== undefined) o[f] = typeof v === 'string' ? v : this.named(['oauth', f], v, true);
      }
      if (oauth?.idp) {
        const t = oauth.idp.idToken;
        o.idp = { ...oauth.idp, idToken: typeof t === 'string' ? t : this.named(['oauth', 'idp', 'idToken'], t, true) };
      }
      if (s?.oauthClient) {
        if (oauth?.clientId) this.fail(['oauth', 'clientId'], 'conflict', 'a client id is both in the file and stored in creds.json');
        o.clientId = s.oauthClient.clientId;
        if (s.oauthClient.clientSecret) o.clientSecret = s.oauthClient.clientSecret;
      }
      const r = oauthConfigSchema.safeParse(o);
      if (!r.success) this.fail(['oauth'], 'conflict', `with the stored client: ${describeZodError(r.error)}`);
      oauth = r.data;
    }
    const merged = {
      type: 'http' as const,
      url: entry.url,
      headers,
      bearerTokenEnvVar: entry.bearerTokenEnvVar,
      oauth,
      isolate: entry.isolate,
      startupTimeoutMs: entry.startupTimeoutMs,
      callTimeoutMs: entry.callTimeoutMs,
    };
    // protocol/config.ts's own rules over the merged whole: a stored token beside bearerTokenEnvVar or oauth, a reserved header name.
    const r = httpServerSchema.safeParse(merged);
    if (!r.success)
      this.fail(r.error.issues[0]?.path.map(String) ?? [], 'conflict', `with the stored secrets: ${describeZodError(r.error)}`);
    return r.data;
  }
}

/**
 * Whether a server's connection is shared by the sessions composing it: the entry's `share`, else for HTTP `auto`
 * (shared once its saved catalogue says it speaks 2026-07-28, which keeps no state per client; a 2025-era HTTP
 * session may keep a login or a browser) and for stdio no (a local process often keeps per-client state — a
 * browser, an open file — that sessions must not see each other's of).
 */
export function shares(share: boolean | undefined, type: 'stdio' | 'http'): boolean | 'auto' {
  return share ?? (type === 'http' ? 'auto' : false);
}

/** Resolves one entry; throws ALBEDO_INVALID_CONFIG with `data: { server, path, reason }`. */
export function resolveSettingsServer(name: string, entry: SettingsServer, ctx: ResolveEnv): ResolvedSettingsServer {
  const r: Resolver = new Resolver(name, ctx);
  const config = r.config(entry);
  let server: ResolvedServer;
  try {
    server = resolveServer(config, ctx.env, ctx.home, { name, credsPath: ctx.credsPath });
  } catch (err) {
    // resolveServer's messages name fields, never values.
    r.fail([], 'invalid', AlbedoError.is(err) ? err.message : 'invalid server config');
  }
  let identity = null;
  if (server.type === 'http' && server.auth) {
    try {
      identity = signInIdentity(ctx.creds.oauth(name, server.url));
    } catch (err) {
      r.fail([], 'invalid_credentials', (err as Error).message);
    }
  }
  return {
    name,
    server,
    fingerprint: fingerprintOf(server, identity),
    enabled: entry.enabled,
    isolate: entry.isolate,
    share: shares(entry.share, server.type),
    enabledTools: entry.enabledTools ?? null,
    disabledTools: entry.disabledTools,
    alwaysLoad: entry.alwaysLoad ?? false,
    resultBudget: entry.resultBudget ?? null,
    warnings: server.type === 'stdio' ? exposureWarnings(ctx.home, server.cwd, server.args) : [],
  };
}

/** What `name` resolves to, without a secret value; only "cannot be prepared as saved" is an answer, anything else is thrown. */
export function resolutionOf(name: string, entry: SettingsServer, ctx: ResolveEnv): ServerResolution {
  try {
    const r = resolveSettingsServer(name, entry, ctx);
    const oauthUrl = r.server.type === 'http' && r.server.auth ? r.server.url : null;
    return { ok: true, fingerprint: r.fingerprint, warnings: r.warnings ?? [], oauthUrl };
  } catch (err) {
    if (!AlbedoError.is(err) || err.code !== 'ALBEDO_INVALID_CONFIG') throw err;
    return { ok: false, error: err.toJSON() };
  }
}
