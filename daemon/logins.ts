/**
 * Sign-ins through the API (`/v1/auth/logins/mcp:{name}`): at most one per
 * server. A sign-in runs the embedding API's flow (`albedo.signInResolved`:
 * discovery, client, PKCE and state, the loopback callback on
 * 127.0.0.1:33418 or an ephemeral port, the token exchange, tokens into
 * creds.json) for the server as the settings service resolves it. The
 * daemon never opens a browser: the flow's "show the user this URL" step
 * hands the authorization URL to the client that started the sign-in, and
 * waits for the loopback callback or for a callback URL pasted through the
 * API, whichever comes first.
 *
 * A pending sign-in is bound to its server: a pasted callback must be the
 * redirect of this sign-in (its redirect URI, its `state`), so another
 * server's callback, or an old one, is refused and the sign-in stays
 * pending. It expires `ttlMs` (ten minutes) after its URL was issued: the
 * flow's own timer fails it (`expired`), and a callback after that moment
 * is refused by this clock too.
 *
 * Once signed in, creds.json holds the tokens; the settings service sees
 * the file change, the server's fingerprint moves, and open sessions reload
 * and take the server in — nothing here tells them.
 */
import type { AuthorizeHandler } from '../api/albedo.ts';
import type { Kernel } from '../kernel/kernel.ts';
import type { ResolvedHttpServer } from '../protocol/config.ts';
import { AlbedoError, type AlbedoErrorCode } from '../protocol/errors.ts';
import type { AuthStatus } from '../protocol/oauth.ts';
import { ApiError, statusOf } from './errors.ts';
import { authOf, SETTINGS_TIMEOUT_MS } from './servers.ts';
import type { AuthDto, LoginDto } from './schemas.ts';

/** How long a pending sign-in lasts once its URL is issued: ten minutes (docs/design.md, "Sign-in"). */
export const SIGN_IN_TTL_MS = 10 * 60_000;

export interface LoginsOptions {
  kernel: Kernel;
  /** Runs the flow (albedo.signInResolved). */
  signIn(server: ResolvedHttpServer, o: { authorize: AuthorizeHandler; timeoutMs: number }): Promise<AuthStatus>;
  ttlMs?: number;
  /** The clock (epoch ms). */
  now?: () => number;
  log?: (line: string) => void;
}

type State = 'pending' | 'completed' | 'failed';

/** One sign-in. */
class Login {
  readonly server: string;
  readonly startedAt: number;
  state: State = 'pending';
  url: string | null = null;
  expiresAt: number | null = null;
  auth: AuthDto | null = null;
  error: LoginDto['error'] = null;
  /** Set once a callback was handed to the flow: the next one is not waited for. */
  consumed = false;
  /** Set by DELETE, a sign-out or a removal: the flow is told to stop. */
  cancelled = false;
  /** Resolves once the flow asks to show the URL (the sign-in is interactive) or settles. */
  readonly shown: Promise<void>;
  /** Resolves once the flow has settled (never rejects). */
  settled!: Promise<void>;
  #show!: () => void;
  #paste: ((url: string | undefined) => void) | undefined;
  #stop: ((err: AlbedoError) => void) | undefined;

  constructor(server: string, now: number) {
    this.server = server;
    this.startedAt = now;
    this.shown = new Promise<void>((r) => {
      this.#show = r;
    });
  }

  /** The flow's authorize step: keep the URL, wait for a pasted callback (or for the flow to no longer need one). */
  authorize(url: string, signal: AbortSignal, expiresAt: number): Promise<string | undefined> {
    this.url = url;
    this.expiresAt = expiresAt;
    this.#show();
    return new Promise<string | undefined>((resolve, reject) => {
      if (this.cancelled) return reject(cancelledError(this.server));
      this.#paste = resolve;
      this.#stop = reject;
      signal.addEventListener('abort', () => resolve(undefined), { once: true });
    });
  }

  showSettled(): void {
    this.#show();
  }

  /** Hands a callback URL to the flow. */
  paste(url: string): void {
    this.consumed = true;
    this.#paste?.(url);
  }

  /** Tells the flow to stop (its authorize step fails, the loopback listener closes). */
  cancel(): void {
    this.cancelled = true;
    this.#stop?.(cancelledError(this.server));
  }

  /** The parameter of the authorization URL named `key`. */
  param(key: string): string | null {
    return this.url === null ? null : new URL(this.url).searchParams.get(key);
  }

  dto(): LoginDto {
    const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
    return {
      login: `mcp:${this.server}`,
      server: this.server,
      state: this.state,
      authorizationUrl: this.state === 'pending' ? this.url : null,
      startedAt: iso(this.startedAt)!,
      expiresAt: this.state === 'pending' ? iso(this.expiresAt) : null,
      auth: this.auth,
      error: this.error,
    };
  }
}

function cancelledError(server: string): AlbedoError {
  return new AlbedoError('ALBEDO_CLOSED', `the sign-in to ${server} was cancelled`, { outcome: 'not_run' });
}

const notFound = (server: string): ApiError =>
  new ApiError(404, 'ALBEDO_NOT_FOUND', `no sign-in to ${JSON.stringify(server)} is known; start one with PUT`, {
    path: ['params', 'login'],
  });

export class Logins {
  readonly #o: LoginsOptions;
  readonly #ttl: number;
  readonly #now: () => number;
  readonly #logins = new Map<string, Login>();

  constructor(o: LoginsOptions) {
    this.#o = o;
    this.#ttl = o.ttlMs ?? SIGN_IN_TTL_MS;
    this.#now = o.now ?? Date.now;
  }

  /** How many sign-ins wait for the user. */
  get pending(): number {
    return [...this.#logins.values()].filter((l) => l.state === 'pending').length;
  }

  /**
   * Starts a sign-in to `name` (or returns the one pending: `created`
   * false). Resolves once the URL is known (or the flow is over: a
   * non-interactive grant needs no user).
   */
  async start(name: string): Promise<{ login: LoginDto; created: boolean }> {
    const had = this.#logins.get(name);
    if (had?.state === 'pending' && !had.cancelled) return { login: had.dto(), created: false };
    const server = await this.#resolve(name);
    // Checked again: another PUT may have started one while this one resolved.
    const raced = this.#logins.get(name);
    if (raced?.state === 'pending' && !raced.cancelled) return { login: raced.dto(), created: false };
    const login = new Login(name, this.#now());
    this.#logins.set(name, login);
    const authorize: AuthorizeHandler = ({ url, signal }) => login.authorize(url, signal, this.#now() + this.#ttl);
    login.settled = this.#o
      .signIn(server, { authorize, timeoutMs: this.#ttl })
      .then(
        (status) => {
          login.state = 'completed';
          login.auth = authOf(status);
          this.#o.log?.(`signed in to ${name}`);
        },
        (err: unknown) => {
          // Already failed by this clock (expired): that is the reason, not the cancellation it caused.
          if (login.state === 'failed') return;
          login.state = 'failed';
          login.error = failure(err, login.cancelled);
          this.#o.log?.(`the sign-in to ${name} failed (${login.error.code}${login.error.reason ? `: ${login.error.reason}` : ''})`);
        },
      )
      .finally(() => login.showSettled());
    await login.shown;
    if (login.cancelled)
      throw new ApiError(409, 'ALBEDO_SIGN_IN_FAILED', `the sign-in to ${name} was cancelled meanwhile`, { outcome: 'not_run' });
    if (login.state === 'failed') {
      const e = login.error!;
      // The authorization server could not be used (discovery, registration, PKCE support): its fault, not the request's.
      const status = e.code === 'ALBEDO_SIGN_IN_FAILED' ? 502 : statusOf(e.code as AlbedoErrorCode);
      throw new ApiError(status, e.code as AlbedoErrorCode, e.message, { outcome: 'not_run' });
    }
    if (login.state === 'pending') this.#o.log?.(`a sign-in to ${name} waits for the user`);
    return { login: login.dto(), created: true };
  }

  async #resolve(name: string): Promise<ResolvedHttpServer> {
    let resolved;
    try {
      resolved = await this.#o.kernel.call('settings', 'settings/resolve', { name }, { timeoutMs: SETTINGS_TIMEOUT_MS });
    } catch (err) {
      if (!AlbedoError.is(err)) throw err;
      if (err.code === 'ALBEDO_NOT_FOUND') {
        throw new ApiError(404, 'ALBEDO_NOT_FOUND', `no server ${JSON.stringify(name)} in the settings`, { path: ['params', 'login'] });
      }
      // The entry as saved cannot be prepared (a variable not set, creds.json broken): nothing to sign in to until it is fixed.
      if (err.code === 'ALBEDO_INVALID_CONFIG')
        throw new ApiError(409, err.code, `cannot sign in to ${name}: ${err.message}`, { outcome: 'not_run' });
      throw err;
    }
    const s = resolved.server;
    if (s.type !== 'http' || !s.auth) {
      const why =
        s.type !== 'http'
          ? 'a stdio server does not sign in'
          : 'it has a fixed Authorization (a bearer token or header); it does not use OAuth';
      throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `${name}: ${why}`, { path: ['params', 'login'] });
    }
    return s;
  }

  /** The sign-in to `name` as it stands (404 when none is known). */
  get(name: string): LoginDto {
    const l = this.#logins.get(name);
    if (!l) throw notFound(name);
    this.#expire(l);
    return l.dto();
  }

  /**
   * A callback URL pasted by the user for the pending sign-in to `name`:
   * it must be this sign-in's redirect (its redirect URI and `state`), else
   * 400 and the sign-in stays pending. Resolves with the sign-in once the
   * flow is over: completed, or a 409 saying why it failed.
   */
  async callback(name: string, pasted: string): Promise<LoginDto> {
    const l = this.#logins.get(name);
    if (!l) throw notFound(name);
    this.#expire(l);
    if (l.state !== 'pending' || l.url === null) {
      const why =
        l.state === 'pending' ? 'it has no authorization URL' : `it is ${l.state}${l.error?.reason ? ` (${l.error.reason})` : ''}`;
      throw new ApiError(409, 'ALBEDO_SIGN_IN_FAILED', `the sign-in to ${name} is not waiting for a callback: ${why}`, {
        outcome: 'not_run',
      });
    }
    const bad = (why: string): ApiError =>
      new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `url: ${why}; the sign-in is still pending`, { path: ['body', 'url'] });
    let u: URL;
    try {
      u = new URL(pasted.trim());
    } catch {
      throw bad('not a URL');
    }
    if (`${u.origin}${u.pathname}` !== l.param('redirect_uri')) throw bad('not the redirect of this sign-in (another redirect URI)');
    if (u.searchParams.get('state') !== l.param('state')) {
      throw bad("its state is not this sign-in's (the callback of another sign-in, or of an older one)");
    }
    if (l.consumed) {
      throw new ApiError(409, 'ALBEDO_SIGN_IN_FAILED', `the sign-in to ${name} already received its callback`, { outcome: 'not_run' });
    }
    l.paste(u.href);
    await l.settled;
    const after = l.dto();
    if (after.state === 'failed') throw new ApiError(409, 'ALBEDO_SIGN_IN_FAILED', after.error!.message, { outcome: 'not_run' });
    return after;
  }

  /** Cancels (when pending) and forgets the sign-in to `name`; false when none was known. Resolves once its flow is over. */
  async remove(name: string): Promise<boolean> {
    const l = this.#logins.get(name);
    if (!l) return false;
    this.#logins.delete(name);
    if (l.state === 'pending') {
      l.cancel();
      await l.settled;
    }
    return true;
  }

  /** A pending sign-in past its expiry: stopped now, whatever the flow's own timer says. */
  #expire(l: Login): void {
    if (l.state !== 'pending' || l.expiresAt === null || this.#now() < l.expiresAt || l.consumed) return;
    l.state = 'failed';
    l.error = {
      code: 'ALBEDO_SIGN_IN_FAILED',
      message: `the sign-in to ${l.server} was not completed in time; its state has expired`,
      reason: 'expired',
    };
    l.cancel();
  }

  /** Cancels every pending sign-in (the daemon is stopping: the kernel's close ends whatever flow is still at work). */
  close(): void {
    for (const l of this.#logins.values()) if (l.state === 'pending') l.cancel();
    this.#logins.clear();
  }
}

function failure(err: unknown, cancelled: boolean): NonNullable<LoginDto['error']> {
  if (cancelled) return { code: 'ALBEDO_CLOSED', message: 'the sign-in was cancelled', reason: 'cancelled' };
  if (!AlbedoError.is(err)) return { code: 'ALBEDO_INTERNAL', message: 'the sign-in failed in the daemon' };
  const reason = (err.data as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' ? { code: err.code, message: err.message, reason } : { code: err.code, message: err.message };
}
