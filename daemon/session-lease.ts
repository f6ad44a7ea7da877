/**
 * The leases of the sessions opened over HTTP (`POST /v1/sessions`): a client
 * that dies without its `DELETE` must not leave its session and servers
 * running. A leased session is held while a request naming it is in flight
 * (`/v1/sessions/{id}` and everything under it, an open event stream
 * included: a stream holds it for as long as it stays open) and expires
 * `ttlMs` after the last such request ended. Then the registry closes it as
 * `DELETE` does (session-registry.ts).
 *
 * Figures: 5 minutes by default — beyond a harness's long model call, which
 * sends nothing meanwhile —, a client may ask 10 s to 1 h at the open or at a
 * renewal; `ALBEDO_SESSION_LEASE_MS` (200 ms to 1 h) sets the default, for
 * tests. There is no unleased session over HTTP: the embedding API's sessions
 * and the daemon's own (gateways, ACP sessions, whose adapters hold their own
 * attachment leases: acp/attachments.ts) carry none.
 *
 * Across a restart: a session a killed daemon left is restored with a fresh
 * lease of its whole ttl from the restore, so its client has that long to
 * reconnect its stream or send a request. A ttl other than the default is
 * kept in `session-leases.json` (0600, atomic; ids and figures, nothing
 * secret) so the restored lease keeps it; a default one needs no record.
 */
import { readFileSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../platform/atomic-file.ts';

/** The lease a session gets when its client asks for none: 5 minutes. */
export const LEASE_TTL_MS = 300_000;
/** The shortest and the longest lease a client may ask for. */
export const MIN_LEASE_TTL_MS = 10_000;
export const MAX_LEASE_TTL_MS = 3_600_000;
/** The shortest default `ALBEDO_SESSION_LEASE_MS` may set (tests). */
const MIN_TEST_TTL_MS = 200;
export const LEASE_FILE = 'session-leases.json';

/** The default lease: `ALBEDO_SESSION_LEASE_MS` (200 ms to 1 h; anything else is ignored), else 5 minutes. */
export function leaseTtl(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.ALBEDO_SESSION_LEASE_MS);
  return Number.isInteger(v) && v >= MIN_TEST_TTL_MS && v <= MAX_LEASE_TTL_MS ? v : LEASE_TTL_MS;
}

/** A lease as the API shows it. */
export interface LeaseView {
  ttlMs: number;
  /** When it expires if no request names the session meanwhile (while one is in flight: `ttlMs` from now). */
  expiresAt: number;
  /** The event streams open on the session (each holds it). */
  streams: number;
}

/** Time, for tests. */
export interface LeaseClock {
  now(): number;
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const REAL_CLOCK: LeaseClock = {
  now: () => Date.now(),
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (h) => clearTimeout(h as NodeJS.Timeout),
};

interface Lease {
  ttlMs: number;
  expires: number;
  requests: number;
  streams: number;
  timer: unknown;
  /** When the armed timer fires (it re-arms itself for a later expiry). */
  armedFor: number;
}

export interface LeasesOptions {
  defaultTtlMs: number;
  /** Called once when a lease runs out: the session is to be closed. */
  onExpire: (id: string, ttlMs: number) => void;
  /** `session-leases.json` (the ttls other than the default); none: nothing kept. */
  file?: string;
  log?: (line: string) => void;
  clock?: LeaseClock;
}

export class SessionLeases {
  readonly defaultTtlMs: number;
  #o: LeasesOptions;
  #clock: LeaseClock;
  #leases = new Map<string, Lease>();

  constructor(o: LeasesOptions) {
    this.defaultTtlMs = o.defaultTtlMs;
    this.#o = o;
    this.#clock = o.clock ?? REAL_CLOCK;
  }

  /** Leases session `id` for `ttlMs` from now. */
  add(id: string, ttlMs = this.defaultTtlMs): void {
    this.#put(id, ttlMs);
    if (ttlMs !== this.defaultTtlMs) this.#save();
  }

  /** Leases the sessions a killed daemon left, each for its whole ttl (the one kept for it, else the default) from now. */
  restored(ids: string[]): void {
    const kept = this.#read();
    for (const id of ids) this.#put(id, kept.get(id) ?? this.defaultTtlMs);
    this.#save();
  }

  #put(id: string, ttlMs: number): void {
    this.#drop(id);
    const l: Lease = { ttlMs, expires: this.#clock.now() + ttlMs, requests: 0, streams: 0, timer: undefined, armedFor: 0 };
    this.#leases.set(id, l);
    this.#arm(id, l);
  }

  /**
   * Holds session `id` while a request (or an event stream) naming it runs; the function returned lets go (once), and the
   * lease runs again from then. A lease that already ran out is not revived: it expires now.
   */
  hold(id: string, kind: 'requests' | 'streams' = 'requests'): () => void {
    const l = this.#leases.get(id);
    if (!l) return () => {};
    if (this.#due(l)) {
      this.#expire(id);
      return () => {};
    }
    l[kind]++;
    let done = false;
    return () => {
      if (done || this.#leases.get(id) !== l) return;
      done = true;
      l[kind]--;
      l.expires = this.#clock.now() + l.ttlMs;
      this.#arm(id, l);
    };
  }

  /** Renews session `id`'s lease, with a new ttl if given; false if it has none. */
  renew(id: string, ttlMs?: number): boolean {
    const l = this.#leases.get(id);
    if (!l) return false;
    const changed = ttlMs !== undefined && ttlMs !== l.ttlMs;
    if (ttlMs !== undefined) l.ttlMs = ttlMs;
    l.expires = this.#clock.now() + l.ttlMs;
    this.#arm(id, l);
    if (changed) this.#save();
    return true;
  }

  view(id: string): LeaseView | null {
    const l = this.#leases.get(id);
    if (!l) return null;
    const held = l.requests + l.streams > 0;
    return { ttlMs: l.ttlMs, expiresAt: held ? this.#clock.now() + l.ttlMs : l.expires, streams: l.streams };
  }

  /** Session `id` closed (or is closing): its lease goes. */
  drop(id: string): void {
    const l = this.#leases.get(id);
    if (!l) return;
    this.#drop(id);
    if (l.ttlMs !== this.defaultTtlMs) this.#save();
  }

  #drop(id: string): void {
    const l = this.#leases.get(id);
    if (l?.timer !== undefined) this.#clock.clear(l.timer);
    this.#leases.delete(id);
  }

  #due(l: Lease): boolean {
    return l.requests + l.streams === 0 && l.expires <= this.#clock.now();
  }

  /** A timer for the expiry; one armed for an earlier time is kept (it re-arms itself for the later one when it fires). */
  #arm(id: string, l: Lease): void {
    if (l.timer !== undefined) {
      if (l.armedFor <= l.expires) return;
      this.#clock.clear(l.timer);
    }
    l.armedFor = l.expires;
    l.timer = this.#clock.set(
      () => {
        l.timer = undefined;
        if (this.#leases.get(id) !== l || l.requests + l.streams > 0) return; // held: armed again when let go
        if (this.#due(l)) this.#expire(id);
        else this.#arm(id, l);
      },
      Math.max(0, l.expires - this.#clock.now()),
    );
  }

  #expire(id: string): void {
    const l = this.#leases.get(id)!;
    this.drop(id);
    this.#o.onExpire(id, l.ttlMs);
  }

  /** The ttls `session-leases.json` keeps: none when there is no file or it does not read as one (said in the log). */
  #read(): Map<string, number> {
    const out = new Map<string, number>();
    if (!this.#o.file) return out;
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(this.#o.file, 'utf8'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#o.log?.(`${LEASE_FILE} cannot be read: restored sessions get the default lease`);
      return out;
    }
    const leases = (doc as { leases?: unknown } | null)?.leases;
    if (leases && typeof leases === 'object' && !Array.isArray(leases)) {
      for (const [id, ttl] of Object.entries(leases)) {
        if (Number.isInteger(ttl) && (ttl as number) >= MIN_TEST_TTL_MS && (ttl as number) <= MAX_LEASE_TTL_MS) out.set(id, ttl as number);
      }
    }
    return out;
  }

  /** Writes the ttls other than the default (no such lease: no file). */
  #save(): void {
    const file = this.#o.file;
    if (!file) return;
    const leases: Record<string, number> = {};
    for (const [id, l] of this.#leases) if (l.ttlMs !== this.defaultTtlMs) leases[id] = l.ttlMs;
    try {
      if (!Object.keys(leases).length) return rmSync(file, { force: true });
      writeFileAtomic(file, `${JSON.stringify({ leases }, null, 2)}\n`, { mode: 0o600 });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      this.#o.log?.(`${LEASE_FILE} could not be written (${code}): a restart gives its sessions the default lease`);
    }
  }
}
