/**
 * The daemon's sessions: each AlbedoSession it opened (or restored after a
 * restart under the daemon's owner) with its numbered event log, from the
 * moment it is known, so a client that subscribes late or reconnects still
 * gets what it missed.
 *
 * Those opened over HTTP (`openLeased`) carry a lease (session-lease.ts):
 * one that runs out closes its session as `DELETE` does, and says so in the
 * log. Those the daemon opens for itself (`open`: a gateway's, an ACP
 * session) carry none. A session a killed daemon left is leased again when it
 * has no label: the API's open takes none, while gateways and ACP sessions
 * always label theirs.
 */
import type { AlbedoSession, Sessions } from '../api/sessions.ts';
import type { SessionOptions } from '../protocol/composer.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { ApiError } from './errors.ts';
import { EventLog } from './session-events.ts';
import { leaseTtl, SessionLeases, type LeaseClock, type LeaseView } from './session-lease.ts';

export interface Entry {
  session: AlbedoSession;
  log: EventLog;
}

export interface RegistryOptions {
  /** The default lease (default: `leaseTtl()`, 5 minutes unless ALBEDO_SESSION_LEASE_MS says otherwise). */
  leaseTtlMs?: number;
  /** `session-leases.json` in the daemon's home; none: a restored session gets the default lease. */
  leaseFile?: string;
  /** The daemon's log: a line per expired session. */
  log?: (line: string) => void;
  clock?: LeaseClock;
}

/** How many expired ids are remembered, so a late client's 404 can say why. */
const EXPIRED_KEPT = 256;

export class SessionRegistry {
  #sessions: Sessions;
  #entries = new Map<string, Entry>();
  #leases: SessionLeases;
  #log: (line: string) => void;
  /** Sessions whose lease ran out, closing: no longer listed or served. */
  #expiring = new Set<string>();
  #expired = new Set<string>();

  constructor(sessions: Sessions, o: RegistryOptions = {}) {
    this.#sessions = sessions;
    this.#log = o.log ?? (() => {});
    this.#leases = new SessionLeases({
      defaultTtlMs: o.leaseTtlMs ?? leaseTtl(),
      onExpire: (id, ttlMs) => this.#expire(id, ttlMs),
      ...(o.leaseFile ? { file: o.leaseFile } : {}),
      log: this.#log,
      ...(o.clock ? { clock: o.clock } : {}),
    });
  }

  #add(session: AlbedoSession): Entry {
    const had = this.#entries.get(session.id);
    if (had) return had;
    const entry: Entry = { session, log: new EventLog() };
    this.#entries.set(session.id, entry);
    session.on((e) => {
      entry.log.push(e);
      if (e.type !== 'closed') return;
      this.#entries.delete(session.id);
      this.#expiring.delete(session.id);
      this.#leases.drop(session.id);
    });
    return entry;
  }

  /** Takes in the sessions the composer restored from the daemon's records; the unlabelled ones get a fresh lease. */
  async restore(): Promise<number> {
    const restored = await this.#sessions.restored();
    for (const s of restored) this.#add(s);
    this.#leases.restored(restored.filter((s) => s.label === undefined && !s.closed).map((s) => s.id));
    return restored.length;
  }

  /** Opens a session for the daemon itself (a gateway's, an ACP session): no lease. */
  async open(options: SessionOptions): Promise<Entry> {
    return this.#add(await this.#sessions.open(options));
  }

  /** Opens a session for an HTTP client: leased for `ttlMs` (default: the registry's). */
  async openLeased(options: SessionOptions, ttlMs?: number): Promise<Entry> {
    const entry = this.#add(await this.#sessions.open(options));
    if (!entry.session.closed) this.#leases.add(entry.session.id, ttlMs);
    return entry;
  }

  /** The session `id`, or a 404. */
  get(id: string): Entry {
    const e = this.#entries.get(id);
    if (!e || e.session.closed || this.#expiring.has(id)) {
      const message = this.#expired.has(id) ? 'the session expired: its lease ran out' : 'no open session has this id';
      throw new ApiError(404, 'ALBEDO_NOT_FOUND', message, { path: ['params', 'id'] });
    }
    return e;
  }

  list(): Entry[] {
    return [...this.#entries.values()].filter((e) => !e.session.closed && !this.#expiring.has(e.session.id));
  }

  /**
   * Holds session `id`'s lease while a request naming it runs (a `streams` hold: an event stream); call what it returns
   * when it ends. A session without a lease, or unknown, is not held; one whose lease ran out expires now.
   */
  hold(id: string, kind: 'requests' | 'streams' = 'requests'): () => void {
    return this.#leases.hold(id, kind);
  }

  /** Session `id`'s lease; null when it carries none. */
  lease(id: string): LeaseView | null {
    return this.#leases.view(id);
  }

  /** Renews session `id`'s lease (a 404 if there is no such session, a 400 if it carries none), with a new ttl if given. */
  renew(id: string, ttlMs?: number): LeaseView {
    this.get(id);
    if (!this.#leases.renew(id, ttlMs)) {
      const message = "this session carries no lease (a gateway's or an ACP session lives as long as its owner keeps it)";
      throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', message, { path: ['params', 'id'] });
    }
    return this.#leases.view(id)!;
  }

  /** A lease ran out: the session is closed as DELETE closes it (every server reaped), and the log says so. */
  #expire(id: string, ttlMs: number): void {
    const e = this.#entries.get(id);
    if (!e || e.session.closed) return;
    this.#expiring.add(id);
    this.#expired.add(id);
    if (this.#expired.size > EXPIRED_KEPT) this.#expired.delete(this.#expired.values().next().value!);
    this.#log(`session ${id} expired: no request named it and no event stream followed it for ${ttlMs} ms; closing it`);
    e.session.close().then(
      () => this.#expiring.delete(id),
      (err: unknown) => {
        // Still open: served again, and tried again once its lease runs out anew.
        this.#expiring.delete(id);
        this.#expired.delete(id);
        if (!e.session.closed) this.#leases.add(id, ttlMs);
        const code = AlbedoError.is(err) ? err.code : 'error';
        this.#log(`session ${id}: closing it on expiry failed (${code}); tried again in ${ttlMs} ms`);
      },
    );
  }
}
