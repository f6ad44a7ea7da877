/**
 * Connect retry for new connections (docs/architecture.md, "Connect retry"). A connection's first dial (open:
 * spawn or connect, negotiate, discover) that fails for a reason that may pass — the network, a connection closed
 * or a process that exited, a timeout, HTTP 408/429/5xx — is tried again after a capped exponential backoff with
 * jitter, waiting at least what the server's `Retry-After` asked for (the transport parses it into
 * `data.retryAfterMs`). Authorization, protocol, configuration and the server's own errors end it at once.
 *
 * One episode per server (its fingerprint) at a time: the first dial leads it; a dial of the same server that
 * arrives meanwhile, from any session, waits for its outcome instead of dialling — after a success it opens its
 * own connection with one attempt, after a blocked or exhausted episode it fails with the episode's error without
 * touching the server. A participant that leaves (its session closed) stops waiting at once (one whose attempt runs
 * gets that attempt's outcome, so that its owner closes what it opened); when none is left the backoff is cut and
 * nothing more is dialled. Calls are never retried here, and later dials (come-back probes, a
 * call's dial of an unreachable server) make one attempt: they only join an episode that runs.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { mayPass } from '../../protocol/services/transport.ts';

export interface RetryPolicy {
  /** Attempts after the original one: an episode makes at most 1 + maxRetries attempts. */
  maxRetries: number;
  /** The first retry's backoff; it doubles for each next one. */
  baseDelayMs: number;
  /** The backoff stops doubling here; a server's Retry-After may ask for more. */
  capMs: number;
  /** The share of a backoff taken off at random: 0.5 waits between half of it and all of it. */
  jitter: number;
  /**
   * No attempt is scheduled later than this after the episode's first: the bound on an honoured Retry-After. A
   * wait that would pass it ends the episode as exhausted (the server's hint stays in the error's data).
   */
  windowMs: number;
}

/** The policy of every composer: 4 attempts at most, 1 s, 2 s, 4 s apart (less jitter), within 5 minutes. */
export const CONNECT_RETRY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 3,
  baseDelayMs: 1_000,
  capMs: 60_000,
  jitter: 0.5,
  windowMs: 5 * 60_000,
});

/** Why a failed attempt may be tried again. */
export type RetryCause = 'network' | 'closed' | 'timeout' | 'http';

const dataOf = (err: AlbedoError): Record<string, unknown> =>
  typeof err.data === 'object' && err.data !== null && !Array.isArray(err.data) ? (err.data as Record<string, unknown>) : {};

/** A TLS failure (a certificate, a handshake) is configuration, not the network: it is not tried again. */
const TLS_ERRNO = /CERT|TLS|SSL|UNABLE_TO/;

/**
 * The transport's failure typed for the retry (its codes say it; docs/architecture.md "Connect retry"); null when
 * it is final: sign-in, configuration, protocol or the server's application errors, a process that cannot start,
 * and anything Albedo itself gave up on (ALBEDO_DEADLINE, ALBEDO_SERVICE_LOST).
 */
export function retryCause(err: AlbedoError): RetryCause | null {
  const data = dataOf(err);
  switch (err.code) {
    case 'ALBEDO_HTTP_ERROR':
    // A refused notifications/initialized keeps the refusal's status in its data.
    case 'ALBEDO_HANDSHAKE_FAILED':
      return typeof data.status === 'number' && mayPass(data.status) ? 'http' : null;
    case 'ALBEDO_CONNECTION_CLOSED':
    case 'ALBEDO_STREAM_BROKEN':
      if (typeof data.errno === 'string' && TLS_ERRNO.test(data.errno)) return null;
      return typeof data.errno === 'string' ? 'network' : 'closed';
    case 'ALBEDO_SESSION_EXPIRED':
    case 'ALBEDO_SERVER_EXITED':
      return 'closed';
    case 'ALBEDO_TIMEOUT':
      return 'timeout';
    default:
      return null;
  }
}

/** The server's Retry-After for a retryable HTTP status, in ms (the transport's parse); undefined when it gave none. */
export function retryAfterOf(err: AlbedoError): number | undefined {
  const v = dataOf(err).retryAfterMs;
  return retryCause(err) === 'http' && typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** What a participant is told before each wait: the next attempt's number, of how many, when it starts. */
export interface RetryProgress {
  /** The attempt about to be made (2 is the first retry). */
  attempt: number;
  of: number;
  /** When it starts (`now()`'s ms) and how long the wait is. */
  nextAt: number;
  delayMs: number;
  /** The failure that is retried: its code and its type. */
  code: string;
  cause: RetryCause;
}

/** One dial taking part in an episode. */
export interface RetryParticipant<T> {
  /** One attempt with the participant's own connection: the transport's open. */
  attempt(): Promise<T>;
  /** Aborted when it leaves (its session closed): it stops waiting, rejected with ALBEDO_CLOSED. */
  signal?: AbortSignal;
  /** Told before each wait. */
  progress?(p: RetryProgress): void;
  /**
   * The server's startup budget: an episode it leads schedules no attempt later than this after its first (nor
   * past the policy's window), so a session's preparation waits for its servers about as long as without retries,
   * and a server that timed out is not tried again while the session waits.
   */
  windowMs?: number;
}

export interface RetryDeps {
  policy?: RetryPolicy;
  /** Epoch ms. */
  now?: () => number;
  /** In [0, 1). */
  random?: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const asError = (err: unknown): AlbedoError =>
  AlbedoError.is(err) ? err : new AlbedoError('ALBEDO_INTERNAL', err instanceof Error ? err.message : String(err), { outcome: 'unknown' });

const left = (): AlbedoError =>
  new AlbedoError('ALBEDO_CLOSED', 'the session was closed while the server was being connected', { outcome: 'not_run' });

interface Member<T> {
  p: RetryParticipant<T>;
  resolve(v: T): void;
  reject(e: AlbedoError): void;
  gone: boolean;
  off(): void;
}

/** Progress is for display: a listener that throws changes nothing. */
function tell<T>(m: Member<T>, p: RetryProgress): void {
  try {
    m.p.progress?.(p);
  } catch {
    // ignored
  }
}

/**
 * The failure that ends an episode: an exhausted one, or one blocked after a retry, says what the retry did in its
 * data (`retry`); a failure of the first attempt that is not retried is passed on as it came.
 */
function ended(err: AlbedoError, outcome: 'blocked' | 'exhausted', attempts: number, of: number, retryAfterMs?: number): AlbedoError {
  if (outcome === 'blocked' && attempts === 1) return err;
  const retry: Record<string, unknown> = { outcome, attempts, of };
  if (retryAfterMs !== undefined) retry.retryAfterMs = retryAfterMs;
  const tries = `gave up after ${attempts} attempt${attempts === 1 ? '' : 's'}`;
  const why =
    retryAfterMs !== undefined ? ` (the server asked to wait ${retryAfterMs} ms, past the retry window; ${tries})` : ` (${tries})`;
  return new AlbedoError(err.code, outcome === 'exhausted' ? `${err.message}${why}` : err.message, {
    outcome: err.outcome,
    data: { ...dataOf(err), retry },
  });
}

class Episode<T> {
  readonly #members: Member<T>[] = [];
  readonly #stop = new AbortController();
  readonly #deps: Required<RetryDeps>;
  readonly #done: () => void;
  /** The member whose attempt runs: one that leaves meanwhile is answered when its attempt settles. */
  #attempting: Member<T> | undefined;
  /** The last wait announced, told to a participant that joins during it. */
  #last: RetryProgress | undefined;

  constructor(deps: Required<RetryDeps>, done: () => void) {
    this.#deps = deps;
    this.#done = done;
  }

  join(p: RetryParticipant<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const m: Member<T> = { p, resolve, reject, gone: false, off: () => {} };
      const leave = (): void => {
        if (m.gone) return;
        m.gone = true;
        // One whose attempt runs gets its outcome: an open that overtook its close is closed by its owner.
        if (this.#attempting !== m) reject(left());
        if (!this.#members.some((x) => !x.gone)) this.#stop.abort();
      };
      if (p.signal?.aborted) return leave();
      p.signal?.addEventListener('abort', leave, { once: true });
      m.off = () => p.signal?.removeEventListener('abort', leave);
      this.#members.push(m);
      if (this.#last) tell(m, this.#last);
    });
  }

  /** Settles every member still waiting; `each` gives its outcome. */
  #settle(each: (m: Member<T>) => void): void {
    this.#done();
    for (const m of this.#members.splice(0)) {
      m.off();
      if (m.gone) continue;
      m.gone = true;
      each(m);
    }
  }

  /** Every member still waiting fails with the episode's error (the same one for all). */
  #fail(err: AlbedoError): void {
    this.#settle((x) => x.reject(err));
  }

  /** Runs the episode; a fault of its own fails its participants rather than leaving them waiting. */
  async run(): Promise<void> {
    try {
      await this.#run();
    } catch (err) {
      this.#attempting?.reject(asError(err));
      this.#fail(asError(err));
    }
  }

  async #run(): Promise<void> {
    const { policy, now, random } = this.#deps;
    const of = policy.maxRetries + 1;
    const start = now();
    const windowMs = Math.min(policy.windowMs, this.#members[0]?.p.windowMs ?? Infinity);
    let attempts = 0;
    for (;;) {
      // The earliest member still waiting makes the attempt with its own connection (the leader, unless it left).
      const m = this.#members.find((x) => !x.gone);
      if (!m) return this.#settle(() => {});
      attempts++;
      let result: T;
      this.#attempting = m;
      const began = now();
      try {
        result = await m.p.attempt();
      } catch (err) {
        this.#attempting = undefined;
        // An attempt its own session's close cut short says nothing of the server: it does not count.
        if (m.gone) {
          m.reject(left());
          attempts--;
          continue;
        }
        const e = asError(err);
        const cause = retryCause(e);
        if (!cause) return this.#fail(ended(e, 'blocked', attempts, of));
        if (attempts >= of) return this.#fail(ended(e, 'exhausted', attempts, of));
        const hint = retryAfterOf(e);
        const backoff = Math.min(policy.capMs, policy.baseDelayMs * 2 ** (attempts - 1));
        const delayMs = Math.max(Math.round(backoff * (1 - policy.jitter * random())), hint ?? 0);
        const at = now();
        // The next attempt is expected to take as long as this one: it must end within the window too.
        if (at + delayMs + Math.max(0, at - began) - start > windowMs) return this.#fail(ended(e, 'exhausted', attempts, of, hint));
        const p: RetryProgress = { attempt: attempts + 1, of, nextAt: at + delayMs, delayMs, code: e.code, cause };
        this.#last = p;
        for (const x of this.#members) if (!x.gone) tell(x, p);
        await this.#deps.sleep(delayMs, this.#stop.signal);
        this.#last = undefined;
        continue;
      }
      this.#attempting = undefined;
      // The server answered: the one that made it keeps its connection (even if it left: its owner closes it),
      // the others open their own, once each.
      const winner = m;
      winner.gone = true;
      winner.off();
      winner.resolve(result);
      const own = (x: Member<T>): void =>
        void Promise.resolve()
          .then(() => x.p.attempt())
          .then(x.resolve, (e: unknown) => x.reject(asError(e)));
      this.#settle(own);
      return;
    }
  }
}

/** The episodes of one composer (or one worker), by server fingerprint. */
export class ConnectRetry<T> {
  readonly policy: RetryPolicy;
  #deps: Required<RetryDeps>;
  #episodes = new Map<string, Episode<T>>();

  constructor(deps: RetryDeps = {}) {
    this.policy = deps.policy ?? CONNECT_RETRY;
    this.#deps = {
      policy: this.policy,
      now: deps.now ?? Date.now,
      random: deps.random ?? Math.random,
      sleep: deps.sleep ?? sleep,
    };
  }

  /** Whether an episode for `key` runs now. */
  running(key: string): boolean {
    return this.#episodes.has(key);
  }

  /**
   * Opens through the episode of `key`: joins the one that runs, else leads a new one when `first` (a
   * connection's first dial), else makes one attempt alone.
   */
  open(key: string, p: RetryParticipant<T>, first: boolean): Promise<T> {
    const running = this.#episodes.get(key);
    if (running) return running.join(p);
    if (!first) return p.attempt();
    const episode: Episode<T> = new Episode(this.#deps, () => {
      if (this.#episodes.get(key) === episode) this.#episodes.delete(key);
    });
    this.#episodes.set(key, episode);
    const led = episode.join(p);
    void episode.run();
    return led;
  }
}

let shared: ConnectRetry<unknown> = new ConnectRetry();

/** The registry the connections of this thread (one composer per worker) use. */
export function connectRetry<T>(): ConnectRetry<T> {
  return shared as ConnectRetry<T>;
}

/** Replaces it (tests inject a clock, random and sleep); returns a function that puts the previous one back. */
export function useConnectRetry(r: ConnectRetry<unknown>): () => void {
  const before = shared;
  shared = r;
  return () => {
    shared = before;
  };
}
