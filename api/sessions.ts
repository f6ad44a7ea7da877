/**
 * `albedo.sessions`: agent sessions over the servers of
 * `$ALBEDO_HOME/extensions.json`. The sessions live in the composer service
 * (a worker, services/composer/service.ts) over the settings and catalogue
 * services (workers too, all started on first use, as the service table
 * says: api/service-table.ts). Each AlbedoSession (api/session.ts) mirrors
 * its session's last snapshot and sends a call for an open server straight
 * to that connection's transport worker; only a call whose server is not
 * open goes through the composer. A composer that crashes is restarted and restores its
 * sessions from their LMDB records; calls in flight through it fail with an
 * unknown outcome and are not retried.
 */
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { SessionOptions } from '../protocol/composer.ts';
import type { SessionSnapshot } from '../protocol/services/composer.ts';
import type { ServiceTable } from './service-table.ts';
import { DirectCalls } from './direct-calls.ts';
import { fixedTools } from './deferred.ts';
import { ResultStore } from './results.ts';
import { AlbedoSession, OPEN_TIMEOUT_MS } from './session.ts';
import { checkWorkingDir } from './resource-export.ts';

export { AlbedoSession } from './session.ts';
export type { AlbedoCallOptions } from './session.ts';
export type { Progress, OnProgress } from './progress.ts';
export type { SessionRequestOp } from '../protocol/services/composer.ts';
export type { CompletionRef, CompletionResult, LoggingLevel } from '../protocol/services/transport.ts';
export type {
  Activity,
  ExtensionState,
  ExtensionsChange,
  OverlayResult,
  OverlayServer,
  OverlayStatus,
  ServerStatus,
  SessionCallOptions,
  SessionEvent,
  SessionExtensions,
  SessionOptions,
} from '../protocol/composer.ts';
export type { ModelTool } from '../protocol/catalogue.ts';
export type { FoundTool } from './deferred.ts';
export type { ResultPage } from './results.ts';

export interface SessionsInit {
  kernel: Kernel;
  /** $ALBEDO_HOME; null: no sessions (they need extensions.json and the saved catalogues). */
  home: string | null;
  /** The instance's services: the ones that start with sessions are started by `start()`. */
  services: ServiceTable;
  /** The owner of the session records (AlbedoOptions.owner, else `pid:<pid>:<uuid>`: this instance only). */
  owner: string;
}

/** `albedo.sessions`: opens and lists sessions. */
export class Sessions {
  #init: SessionsInit;
  #owner: string;
  #started = false;
  #direct: DirectCalls;
  #offs: Array<() => void> = [];
  #open = new Map<string, AlbedoSession>();
  /**
   * Snapshots of sessions not in #open yet, kept while an open or a restore is under way: the composer may publish
   * one (a server that was quick to dial, a shared connection joined) before the answer's session is registered.
   */
  #early = new Map<string, SessionSnapshot>();
  #registering = 0;
  #closed = false;
  /** Cut results' kept parts, for every session of this instance. */
  #results = new ResultStore();

  /** Use albedo.sessions. */
  constructor(init: SessionsInit) {
    this.#init = init;
    this.#owner = init.owner;
    this.#direct = new DirectCalls(init.kernel);
  }

  /**
   * Starts the host's services now (settings, catalogue, composer), so an
   * owner such as the daemon can call them before any session opens.
   * Idempotent; throws ALBEDO_INVALID_ARGUMENT without a home.
   */
  start(): void {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    const home = this.#init.home;
    if (home === null) {
      const message =
        'sessions need a home (the state directory with extensions.json and the saved catalogues); ' +
        'this instance was created with home: null';
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
    }
    if (this.#started) return;
    this.#started = true;
    const { kernel } = this.#init;
    // `host/drain` first: the composer calls it.
    this.#direct.provide();
    this.#init.services.start(kernel, 'sessions');
    this.#offs.push(
      kernel.on('composer', 'session/updated', (snap) => {
        const s = this.#open.get(snap.id);
        if (s) s.updated(snap);
        else if (this.#registering > 0) this.#early.set(snap.id, snap);
      }),
      kernel.on('composer', 'session/event', ({ id, event }) => {
        const s = this.#open.get(id);
        if (!s) return;
        if (event.type === 'closed') this.#open.delete(id);
        s.event(event);
      }),
    );
  }

  /**
   * Opens a session over the configured servers: `servers.include` /
   * `servers.exclude` choose among them, `profile` is the provider profile
   * of the tool schemas (`portable` by default), `extensions.mcp: false`
   * turns MCP off for this session. Resolves once the session can advertise:
   * servers with a saved catalogue are advertised at once and dialled in the
   * background, the others are dialled now. Rejects with
   * ALBEDO_INVALID_ARGUMENT (bad options, an unknown profile, or an instance
   * without a home), ALBEDO_INVALID_CONFIG (the settings cannot be resolved:
   * `data.issues` names each server), ALBEDO_NOT_FOUND (`include` names no
   * configured server), ALBEDO_CATALOGUE_TOO_LARGE, ALBEDO_CLOSED.
   */
  async open(options: SessionOptions = {}): Promise<AlbedoSession> {
    this.start();
    const cwd = (options as { cwd?: unknown } | null)?.cwd;
    if (cwd !== undefined) await checkWorkingDir(cwd as string, this.#init.home);
    this.#registering++;
    try {
      const snap = await this.#init.kernel.call(
        'composer',
        'session/open',
        { owner: this.#owner, options },
        { timeoutMs: OPEN_TIMEOUT_MS },
      );
      const session = new AlbedoSession(
        this.#init.kernel,
        this.#direct,
        snap,
        await fixedTools(snap.profile),
        this.#results,
        this.#init.home,
      );
      if (this.#closed) {
        await session.close().catch(() => {});
        throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
      }
      this.#register(session);
      return session;
    } finally {
      if (--this.#registering === 0) this.#early.clear();
    }
  }

  /** In #open from now on, with what the composer published while it was being made. */
  #register(session: AlbedoSession): void {
    this.#open.set(session.id, session);
    const early = this.#early.get(session.id);
    this.#early.delete(session.id);
    if (early) session.updated(early);
  }

  /**
   * Starts the host's services and hands out the sessions their composer
   * restored from the records a previous instance with the same `owner`
   * left (a daemon killed with its sessions open): same ids, their servers
   * dialled again. Each is in `list()` from then on.
   */
  async restored(): Promise<AlbedoSession[]> {
    this.start();
    this.#registering++;
    try {
      const snaps = await this.#init.kernel.call('composer', 'composer/sessions', { owner: this.#owner }, { timeoutMs: OPEN_TIMEOUT_MS });
      const out: AlbedoSession[] = [];
      for (const snap of snaps) {
        let s = this.#open.get(snap.id);
        if (!s) {
          s = new AlbedoSession(this.#init.kernel, this.#direct, snap, await fixedTools(snap.profile), this.#results, this.#init.home);
          this.#register(s);
        }
        out.push(s);
      }
      return out;
    } finally {
      if (--this.#registering === 0) this.#early.clear();
    }
  }

  /** The open sessions, in the order they were opened. */
  list(): AlbedoSession[] {
    return [...this.#open.values()];
  }

  #closing: Promise<void> | undefined;

  /** Closes every session (reaping every server). Idempotent: a second call waits for the first. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    if (this.#started) {
      await this.#init.kernel.call('composer', 'composer/close-owner', { owner: this.#owner }, { timeoutMs: 60_000 }).catch(() => {});
    }
    for (const off of this.#offs) off();
    for (const s of this.#open.values()) if (!s.closed) s.event({ type: 'closed' });
    this.#open.clear();
  }
}
