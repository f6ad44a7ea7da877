/**
 * The embedding API: `createAlbedo()` starts the kernel in-process with its
 * worker-thread services, and hands out connections. Everything above the
 * kernel (the CLI, benchmarks, harnesses) uses this, never internals.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Kernel, type ServiceSpec } from '../kernel/kernel.ts';
import { Faults } from '../kernel/faults.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { ServerConfigInput } from '../protocol/config.ts';
import type { Implementation } from '../protocol/mcp.ts';
import { parseServerConfig, resolveServer } from './resolve.ts';
import type { ResolvedHttpServer, ServerConfig } from '../protocol/config.ts';
import type { AuthStatus } from '../services/oauth/public.ts';
import { capabilitiesFor, INPUT_METHODS, type ClientHandlers } from '../protocol/client-input.ts';
import { Connection } from './connection.ts';
import { contextOf } from './progress.ts';
import { Sessions } from './sessions.ts';
import { serviceTable, type ServiceOverrides, type ServiceTable } from './service-table.ts';

export type { ServiceOverride, ServiceOverrides } from './service-table.ts';
export type { Faults } from '../kernel/faults.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

// OAuth is loaded at its first use, not with the API: its modules (undici, jose, the lock file code) cost a
// short-lived stdio-only process tens of milliseconds and megabytes it never uses. One module (the store and the
// sign-in status together: services/oauth/public.ts), under the two names its callers use.
const oauthStore = (): Promise<typeof import('../services/oauth/public.ts')> => import('../services/oauth/public.ts');
const oauthSignIn = oauthStore;

export interface AlbedoOptions {
  /** State directory ($ALBEDO_HOME, default ~/.albedo); null keeps nothing on disk (no era cache). */
  home?: string | null;
  /**
   * The path the settings service reads `home`'s extensions.json and watches
   * it through (default `home`): the daemon passes `/proc/self/fd/N` of the
   * home it checked and holds open (protocol/private-dir.ts), so a home
   * swapped after its check is not what is read.
   */
  homeAt?: string;
  /** Shared transport workers (connections are spread over them). Default 2. */
  transportWorkers?: number;
  clientInfo?: Implementation;
  /**
   * Handlers for what servers may ask of the client (elicitation, sampling,
   * roots). Each one present declares its capability; with none (the
   * daemon's default) nothing is declared and a server's request for input
   * fails the call with ALBEDO_INPUT_REQUIRED. `connect` may override them.
   */
  handlers?: ClientHandlers;
  /**
   * Shows the user an OAuth authorization URL during a sign-in. It may
   * resolve with the callback URL the user pasted (the loopback callback
   * wins if it comes first). Default: print the URL to stderr and open the
   * browser unless ALBEDO_NO_BROWSER is set.
   */
  authorize?: AuthorizeHandler;
  /**
   * Answers what a session's servers ask of the client (elicitation, sampling, roots) when the session declared its own
   * capabilities (SessionOptions.capabilities): the daemon hands each one to the gateway client whose call it belongs
   * to. Without it, the instance's `handlers` answer. Throw ALBEDO_INPUT_REQUIRED to refuse (the server is told the
   * method is not supported).
   */
  sessionInput?: SessionInputHandler;
  /** Supervision tuning, mostly for tests. */
  supervision?: Pick<ServiceSpec, 'restart' | 'heartbeat'>;
  /**
   * Whose sessions these are, for their records in `$ALBEDO_HOME/store`. A
   * stable owner (the daemon's) makes the next instance with the same owner
   * restore the sessions the last one left open (a killed process, say);
   * default: this process and instance only (records of a process that died
   * are pruned by a later instance).
   */
  owner?: string;
  /**
   * Replaces a service's module and/or adds to its options, by service name
   * (transport, oauth, settings, catalogue, composer):
   * `{ catalogue: { module: new URL('./my-catalogue.ts', import.meta.url) } }`.
   * The module implements that service's contract (docs/services.md) and is
   * started, supervised and stopped as the built-in one. An unknown name, a
   * module that is not a file, or options that are not plain data are
   * refused with ALBEDO_INVALID_ARGUMENT before anything starts.
   */
  services?: ServiceOverrides;
  /**
   * Fault injection for tests (docs/api.md): `albedo.faults` crashes or
   * hangs a service's worker and delays or drops calls, and every worker
   * answers the test-only `kernel/echo` and `worker/stats`. Off by default:
   * `albedo.faults` is undefined and workers ignore faults.
   */
  faults?: boolean;
}

/** `signal` aborts once the sign-in no longer needs the handler (the loopback callback came, or it failed or expired). */
export type AuthorizeHandler = (request: {
  server: string;
  url: string;
  signal: AbortSignal;
}) => Promise<string | void | undefined> | string | void | undefined;

/** One request a session's server made of the client: `connection` is its connection id (AlbedoSession.connectionOf). */
export type SessionInputHandler = (request: {
  connection: string;
  /** The server's name for the question, when it asked in a 2026-07-28 input_required round. */
  key?: string;
  /** The `context` of the session call the question belongs to (AlbedoCallOptions.context), when that is known. */
  context?: unknown;
  method: string;
  params: Record<string, unknown>;
  signal: AbortSignal;
}) => Promise<Record<string, unknown>>;

export interface SignInOptions {
  /** The server's name (its credentials are `mcp.<name>.oauth` in creds.json); defaults as for `connect` (the URL's host and path). */
  name?: string;
  /** This sign-in's way of showing the URL, instead of the instance's. */
  authorize?: AuthorizeHandler;
  /** How long the user has to finish (default 5 minutes). */
  timeoutMs?: number;
}

export interface ConnectOptions {
  /** A name for messages, tool prefixes and credentials; defaults to the command's basename or the URL's host and path. */
  name?: string;
  /** This connection's input handlers, instead of the instance's. */
  handlers?: ClientHandlers;
}

/**
 * The state directory: $ALBEDO_HOME, else ~/.albedo. A leading `~` or `~/`
 * is the user's home (a quoted one reaches us unexpanded); a relative path
 * is made absolute against the current directory; `~name` is refused
 * (ALBEDO_INVALID_ARGUMENT): nothing here can expand it. The CLI has the
 * same rule (bin/client/daemon.ts albedoHome).
 */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.ALBEDO_HOME;
  if (!v) return path.join(os.homedir(), '.albedo');
  if (v === '~' || v.startsWith('~/')) return path.join(os.homedir(), v.slice(1));
  if (v.startsWith('~')) {
    throw new AlbedoError(
      'ALBEDO_INVALID_ARGUMENT',
      `ALBEDO_HOME=${JSON.stringify(v)}: only ~ and ~/ are expanded (the user's home); write the full path`,
    );
  }
  return path.resolve(v);
}

export class Albedo {
  readonly kernel: Kernel;
  /** Fault injection; undefined unless the instance was created with `faults: true`. */
  readonly faults: Faults | undefined;
  readonly home: string | null;
  #eraCachePath: string | null;
  #connections = new Map<string, Connection>();
  #handlers: ClientHandlers | undefined;
  #handlersById = new Map<string, ClientHandlers | undefined>();
  #sessionInput: SessionInputHandler | undefined;
  #closed = false;
  #unsubscribe: Array<() => void> = [];
  #authorize: AuthorizeHandler | undefined;
  #authorizeByServer = new Map<string, AuthorizeHandler>();
  #signIns = new Map<string, AbortController>();
  #services: ServiceTable;
  #sessions: Sessions;

  constructor(opts: AlbedoOptions = {}) {
    this.home = opts.home === undefined ? defaultHome() : opts.home;
    if (opts.faults !== undefined && typeof opts.faults !== 'boolean') {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'faults must be true or false', { outcome: 'not_run' });
    }
    const transportWorkers = opts.transportWorkers ?? 2;
    // A pool of no worker (0, a negative, NaN) could place no connection; refused here rather than as a TypeError at connect().
    if (!Number.isSafeInteger(transportWorkers) || transportWorkers < 1) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'transportWorkers must be a whole number of at least 1', {
        outcome: 'not_run',
        data: { path: ['transportWorkers'] },
      });
    }
    const owner = opts.owner ?? `pid:${process.pid}:${randomUUID()}`;
    // Checked before anything is made: a bad `services` starts nothing.
    this.#services = serviceTable(
      {
        home: this.home,
        homeAt: opts.homeAt,
        transportWorkers,
        clientInfo: opts.clientInfo ?? { name: 'albedo', version: pkg.version },
        owner,
        capabilities: capabilitiesFor(opts.handlers),
        supervision: opts.supervision,
      },
      opts.services,
    );
    this.#eraCachePath = this.home === null ? null : path.join(this.home, 'store');
    if (this.#eraCachePath) mkdirSync(this.#eraCachePath, { recursive: true, mode: 0o700 });
    this.kernel = new Kernel({ faults: opts.faults === true });
    this.faults = opts.faults === true ? new Faults(this.kernel) : undefined;
    this.#services.start(this.kernel, 'instance');
    this.#handlers = opts.handlers;
    this.#sessionInput = opts.sessionInput;
    this.#authorize = opts.authorize;
    this.kernel.provide('client', {
      'client/input': async (
        p: { id: string; method: string; params: unknown; key?: string; tag?: string },
        ctx: { signal: AbortSignal },
      ) => {
        const cap = Object.hasOwn(INPUT_METHODS, p.method) ? INPUT_METHODS[p.method] : undefined;
        if (cap && !this.#handlersById.has(p.id) && this.#sessionInput) {
          const params = (p.params ?? {}) as Record<string, unknown>;
          const key = typeof p.key === 'string' ? p.key : undefined;
          const context = contextOf(typeof p.tag === 'string' ? p.tag : undefined);
          const answer = await this.#sessionInput({ connection: p.id, key, context, method: p.method, params, signal: ctx.signal });
          if (!answer || typeof answer !== 'object' || Array.isArray(answer)) {
            throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the ${cap} answer must be an object`, { outcome: 'not_run' });
          }
          return answer;
        }
        // A connection of a session (not made by connect()) has the instance's handlers.
        const handlers = this.#handlersById.has(p.id) ? this.#handlersById.get(p.id) : this.#handlers;
        const handler = cap ? handlers?.[cap] : undefined;
        if (!handler)
          throw new AlbedoError('ALBEDO_INPUT_REQUIRED', `no ${cap ?? p.method} handler is registered for this connection`, {
            outcome: 'not_run',
          });
        const result = await handler((p.params ?? {}) as Record<string, unknown>, {
          connection: this.#connections.get(p.id)?.name ?? p.id,
          signal: ctx.signal,
        });
        if (!result || typeof result !== 'object' || Array.isArray(result)) {
          throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the ${cap} handler must return an object`, { outcome: 'not_run' });
        }
        return result;
      },
      'client/authorize': async (p: { server: string; url: string }, ctx: { signal: AbortSignal }) => {
        const handler = this.#authorizeByServer.get(p.server) ?? this.#authorize ?? (await import('./browser.ts')).openAuthorizationUrl;
        const done = this.#signIns.get(p.server)?.signal;
        const signal = done ? AbortSignal.any([ctx.signal, done]) : ctx.signal;
        const stopped = new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        });
        const pasted = await Promise.race([Promise.resolve(handler({ server: p.server, url: p.url, signal })), stopped]);
        return typeof pasted === 'string' && pasted.trim() ? { callbackUrl: pasted.trim() } : {};
      },
    });
    this.#sessions = new Sessions({ kernel: this.kernel, home: this.home, services: this.#services, owner });
    const byId = (id: string): Connection | undefined => this.#connections.get(id);
    this.#unsubscribe.push(
      this.kernel.on('transport', 'connection/catalogue-changed', (e) => byId(e.id)?.setCatalogue(e.catalogue)),
      this.kernel.on('transport', 'connection/dropped', (e) => {
        const c = byId(e.id);
        if (c) c.emit('dropped', new AlbedoError(e.error.code, e.error.message, { outcome: e.error.outcome, data: e.error.data }));
      }),
      this.kernel.on('transport', 'connection/warned', (e) => byId(e.id)?.emit('warning', e.message, e.code)),
      this.kernel.on('kernel', 'service/lost', (e) => {
        if (e.service !== 'transport') return;
        for (const k of e.keys) {
          const c = byId(k);
          if (!c) continue;
          c.markStale();
          const why = `the transport worker holding ${c.name} was lost (${e.reason}); the next call reconnects`;
          c.emit('dropped', new AlbedoError('ALBEDO_SERVICE_LOST', why, { outcome: 'unknown' }));
        }
      }),
    );
  }

  /** Starts a server, negotiates its era and discovers its catalogue. Bad config is refused before anything runs. */
  async connect(config: ServerConfigInput, opts: ConnectOptions = {}): Promise<Connection> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    const parsed = parseServerConfig(config);
    const name = nameOf(parsed, opts.name);
    const server = resolveServer(parsed, process.env, process.cwd(), { name, credsPath: this.credsPath });
    const id = randomUUID();
    const handlers = opts.handlers ?? this.#handlers;
    const capabilities = capabilitiesFor(handlers);
    this.#handlersById.set(id, handlers);
    try {
      const opened = await this.kernel.call(
        'transport',
        'connection/open',
        { id, server, eraCachePath: this.#eraCachePath, capabilities, name },
        { key: id, isolate: parsed.isolate, timeoutMs: server.startupTimeoutMs * 2 + 5_000 },
      );
      const conn = new Connection({
        id,
        name,
        server,
        isolate: parsed.isolate,
        kernel: this.kernel,
        eraCachePath: this.#eraCachePath,
        capabilities,
        opened,
        onClose: () => {
          this.#connections.delete(id);
          this.#handlersById.delete(id);
        },
      });
      this.#connections.set(id, conn);
      return conn;
    } catch (err) {
      this.#handlersById.delete(id);
      await this.kernel.release('transport', id);
      throw err;
    }
  }

  /** creds.json in the state directory; null without one (credentials then live in worker memory). */
  get credsPath(): string | null {
    return this.home === null ? null : path.join(this.home, 'creds.json');
  }

  #httpServer(config: ServerConfigInput, name: string | undefined): { server: ResolvedHttpServer; name: string } {
    const parsed = parseServerConfig(config);
    if (parsed.type !== 'http') {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'OAuth applies to HTTP servers; this config is a stdio server', {
        outcome: 'not_run',
      });
    }
    const n = nameOf(parsed, name);
    const server = resolveServer(parsed, process.env, process.cwd(), { name: n, credsPath: this.credsPath }) as ResolvedHttpServer;
    if (!server.auth) {
      const why = `${n} has a fixed Authorization header (bearerTokenEnvVar or headers); it does not use OAuth`;
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run' });
    }
    return { server, name: n };
  }

  /**
   * Signs in to an HTTP server that uses OAuth (MCP basic/authorization):
   * discovery, client registration, the browser step through the
   * `authorize` handler, tokens into creds.json. A server configured with a
   * non-interactive grant gets its token without a browser. Resolves with
   * the server's auth status; fails with ALBEDO_SIGN_IN_FAILED (data.reason
   * names the check) and stores no token then.
   */
  async signIn(config: ServerConfigInput, opts: SignInOptions = {}): Promise<AuthStatus> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    const { server } = this.#httpServer(config, opts.name);
    return this.signInResolved(server, opts);
  }

  /**
   * `signIn` for a server already resolved (the daemon resolves a saved
   * entry through the settings service, a client stored in creds.json
   * included). Its credentials are kept under `server.auth.name`; a server
   * without `auth` (a fixed Authorization) is refused.
   */
  async signInResolved(server: ResolvedHttpServer, opts: Omit<SignInOptions, 'name'> = {}): Promise<AuthStatus> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    if (!server.auth) {
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'this server has a fixed Authorization header; it does not use OAuth', {
        outcome: 'not_run',
      });
    }
    const name = server.auth.name;
    if (server.auth!.credsPath === null && server.auth!.oauth.grant === 'authorization_code') {
      const why = 'signing in needs a state directory for creds.json (this instance was created with home: null)';
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run' });
    }
    this.#services.start(this.kernel, 'sign-in');
    const timeoutMs = opts.timeoutMs ?? 5 * 60_000;
    if (this.#signIns.has(name))
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `a sign-in to ${name} is already in progress`, { outcome: 'not_run' });
    const ac = new AbortController();
    this.#signIns.set(name, ac);
    if (opts.authorize) this.#authorizeByServer.set(name, opts.authorize);
    try {
      // The user's time plus the network work around it (discovery, registration, exchange: 15 s each at most).
      return await this.kernel.call(
        'oauth',
        'oauth/sign-in',
        { auth: server.auth!, serverUrl: server.url, timeoutMs },
        { timeoutMs: timeoutMs + 180_000 },
      );
    } finally {
      ac.abort(new AlbedoError('ALBEDO_CLOSED', `the sign-in to ${name} is over`, { outcome: 'not_run' }));
      this.#signIns.delete(name);
      if (opts.authorize) this.#authorizeByServer.delete(name);
    }
  }

  /**
   * A server's auth state (none, needs_sign_in, signed_in, signed_out) with account, expiry, scope,
   * step-up, reason and client; never a token.
   */
  async authStatus(config: ServerConfigInput, opts: { name?: string } = {}): Promise<AuthStatus> {
    const { server, name } = this.#httpServer(config, opts.name);
    const [{ credsStore }, { statusOf }] = await Promise.all([oauthStore(), oauthSignIn()]);
    return statusOf(name, server.url, await credsStore(this.credsPath).get(name, server.url));
  }

  /** The auth status of every server with OAuth state in creds.json, by name; never a token. */
  async authStatuses(): Promise<AuthStatus[]> {
    const [{ credsStore, FileCredsStore }, { statusOf }] = await Promise.all([oauthStore(), oauthSignIn()]);
    const store = credsStore(this.credsPath);
    if (!(store instanceof FileCredsStore)) return [];
    return Object.entries(await store.all()).map(([name, rec]) => statusOf(name, rec.url, rec));
  }

  /** Forgets the server's tokens (the client registration stays); its state becomes signed_out. */
  async signOut(config: ServerConfigInput, opts: { name?: string } = {}): Promise<AuthStatus> {
    const { server } = this.#httpServer(config, opts.name);
    const [{ credsStore }, { signOut: signOutFlow }] = await Promise.all([oauthStore(), oauthSignIn()]);
    return signOutFlow({ auth: server.auth!, serverUrl: server.url, store: credsStore(this.credsPath) });
  }

  get connections(): Connection[] {
    return [...this.#connections.values()];
  }

  /**
   * Agent sessions over the servers of `$ALBEDO_HOME/extensions.json`
   * (api/sessions.ts): `open(options)` and `list()`. An instance created
   * with `home: null` has none (open rejects with ALBEDO_INVALID_ARGUMENT).
   */
  get sessions(): Sessions {
    return this.#sessions;
  }

  /** Closes every session and every connection (reaping every server) and stops the kernel. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([this.#sessions.close(), ...this.connections.map((c) => c.close())]);
    for (const u of this.#unsubscribe) u();
    await this.kernel.stop(10_000);
  }
}

/** A server's name: given, else the URL's host and path, or the command's basename. */
export function nameOf(parsed: ServerConfig, given: string | undefined): string {
  if (given !== undefined) return given;
  if (parsed.type !== 'http') return path.basename(parsed.command);
  // The path is part of it: two servers on one host must not share credentials (mcp.<name>.oauth).
  const u = new URL(parsed.url);
  const p = u.pathname.replace(/\/+$/, '');
  return p ? `${u.host}${p}` : u.host;
}

/** An instance created with `faults: true`: its fault injection is there. */
export type AlbedoWithFaults = Albedo & { readonly faults: Faults };

/**
 * Starts an Albedo kernel in this process. Rejects with
 * ALBEDO_INVALID_ARGUMENT (nothing started) for a bad `services` or `faults`.
 */
export function createAlbedo(opts: AlbedoOptions & { faults: true }): Promise<AlbedoWithFaults>;
export function createAlbedo(opts?: AlbedoOptions): Promise<Albedo>;
export async function createAlbedo(opts: AlbedoOptions = {}): Promise<Albedo> {
  return new Albedo(opts);
}
