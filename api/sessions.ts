/**
 * `albedo.sessions`: agent sessions over the servers of `$ALBEDO_HOME/extensions.json`
 * (issue 15). The session composer (services/composer/) runs here, on the
 * kernel's thread, over the real pieces: the settings service (a worker,
 * started on the first open), the saved catalogues in LMDB, the transport
 * workers and the schema normaliser. A call goes API → transport worker, the
 * same single thread hop as `connect()`. When the settings change (a hand
 * edit, a write, a sign-in), every open session reloads (prepare-then-swap:
 * a reload that fails keeps the previous composition, with a warning event).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kernel, ServiceSpec } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import type { ModelTool } from '../protocol/catalogue.ts';
import type { Activity, ServerStatus, SessionCallOptions, SessionEvent, SessionOptions } from '../protocol/composer.ts';
import { CatalogueStore } from '../services/catalogue/store.ts';
import { normalise, PROFILES } from '../services/catalogue/schema/normalise.ts';
import { Composer } from '../services/composer/composer.ts';
import { kernelTransport } from '../services/composer/kernel-transport.ts';
import { kernelSettings, type SettingsNotice } from '../services/composer/kernel-settings.ts';
import type { Session } from '../services/composer/session.ts';

const SETTINGS = fileURLToPath(new URL('../services/settings/service.ts', import.meta.url));

export type { Activity, ServerStatus, SessionCallOptions, SessionEvent, SessionOptions } from '../protocol/composer.ts';
export type { ModelTool } from '../protocol/catalogue.ts';

type Listener = (event: SessionEvent) => void;

/**
 * One agent session as the embedding API hands it out. Everything the model
 * sees comes from here: `tools()` and `context()` of the current generation;
 * `on()` tells when they change (`refreshed`, with the user-turn text).
 */
export class AlbedoSession {
  readonly id: string;
  #core: Session;
  #listeners = new Set<Listener>();
  #reloading: Promise<void> | undefined;
  #again = false;
  #closed = false;

  /** Use albedo.sessions.open(). */
  constructor(core: Session) {
    this.id = core.id;
    this.#core = core;
    core.on((e) => this.#emit(e));
  }

  #emit(event: SessionEvent): void {
    if (event.type === 'closed') this.#closed = true;
    for (const fn of this.#listeners) {
      try {
        fn(event);
      } catch {
        // A listener's bug must not break the session.
      }
    }
  }

  /** The tool generation: 1 after open, one more each time what the model sees changes. */
  get generation(): number {
    return this.#core.generation;
  }

  /** The model-facing tool definitions of the current generation (names match `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`). Read-only. */
  tools(): ModelTool[] {
    return this.#core.tools();
  }

  /** The MCP context text of the current generation ('' when there is nothing to say). */
  context(): string {
    return this.#core.context();
  }

  /** Each server of the session: its state, whether it is advertised, why it is left out. */
  status(): ServerStatus[] {
    return this.#core.status();
  }

  /** What the current composition warned about (servers left out, tools left out or filtered). */
  warnings(): string[] {
    return this.#core.warnings();
  }

  /**
   * Calls an advertised name or `server/tool` (raw names). Arguments use the
   * property names of the advertised schema (the server's own names work
   * too). A tool's `isError` is a result; errors carry `code` and `outcome`.
   */
  call(name: string, args?: unknown, opts?: SessionCallOptions): Promise<unknown> {
    return this.#core.call(name, args, opts);
  }

  /** `submit` or `turn_end`: due come-back probes run; `turn_end` first applies what waited for the end of the turn. */
  activity(kind: Activity): Promise<void> {
    return this.#core.activity(kind);
  }

  /** Prepares a new composition from the settings as they are now and swaps it in; on failure the previous one stays and this rejects. */
  reload(): Promise<void> {
    return this.#core.reload();
  }

  /** Subscribes to the session's events from now on; returns the unsubscribe function. */
  on(listener: Listener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Closes every connection of the session (each server reaped). Idempotent. */
  close(): Promise<void> {
    return this.#core.close();
  }

  /** The settings changed: reload, one at a time, once more if they changed again meanwhile. A failure keeps the composition. */
  settingsChanged(): void {
    if (this.#closed) return;
    if (this.#reloading) {
      this.#again = true;
      return;
    }
    this.#reloading = (async () => {
      do {
        this.#again = false;
        try {
          await this.#core.reload();
        } catch (err) {
          if (this.#closed || (AlbedoError.is(err) && err.code === 'ALBEDO_CLOSED')) return;
          const e = err as AlbedoError;
          const message = `the settings changed, but they cannot be applied; the session keeps its composition: ${e.message}`;
          this.#emit(e.code ? { type: 'warning', message, code: e.code } : { type: 'warning', message });
        }
      } while (this.#again && !this.#closed);
    })().finally(() => { this.#reloading = undefined; });
  }

  /** extensions.json was edited into something invalid: the settings in force stay, and the session says so. */
  settingsInvalid(file: string, issues: number): void {
    if (this.#closed) return;
    const message = `${file} is not valid (${issues} issue${issues === 1 ? '' : 's'}); the previous settings stay in force`;
    this.#emit({ type: 'warning', message, code: 'ALBEDO_INVALID_CONFIG' });
  }

  /** Settles once no reload triggered by the settings is running. */
  async settled(): Promise<void> {
    while (this.#reloading) await this.#reloading;
  }
}

export interface SessionsInit {
  kernel: Kernel;
  /** $ALBEDO_HOME; null: no sessions (they need extensions.json and the saved catalogues). */
  home: string | null;
  /** The client capabilities declared to the sessions' servers. */
  capabilities: Record<string, unknown>;
  supervision?: Pick<ServiceSpec, 'restart' | 'heartbeat'>;
}

/** `albedo.sessions`: opens and lists sessions. */
export class Sessions {
  #init: SessionsInit;
  #composer: Composer | undefined;
  #unsubscribe: (() => void) | undefined;
  #open = new Map<string, AlbedoSession>();
  #closed = false;

  /** Use albedo.sessions. */
  constructor(init: SessionsInit) {
    this.#init = init;
  }

  /** The settings service and the composer, on first use. */
  #start(home: string): Composer {
    if (this.#composer) return this.#composer;
    const { kernel } = this.#init;
    kernel.start({ name: 'settings', module: SETTINGS, instances: 1, options: { home }, ...this.#init.supervision });
    const storePath = path.join(home, 'store');
    const settings = kernelSettings(kernel);
    this.#composer = new Composer({
      settings,
      catalogues: new CatalogueStore(storePath),
      transport: kernelTransport(kernel, { eraCachePath: storePath, capabilities: this.#init.capabilities }),
      normalise: (schema, profile) => normalise(schema, profile as never),
      clock: Date,
      profiles: PROFILES,
    });
    this.#unsubscribe = settings.subscribe((n: SettingsNotice) => {
      for (const s of this.#open.values()) {
        if (n.type === 'changed') s.settingsChanged();
        else s.settingsInvalid(path.basename(n.event.path), n.event.issues.length);
      }
    });
    return this.#composer;
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
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    const home = this.#init.home;
    if (home === null) {
      const message = 'sessions need a home (the state directory with extensions.json and the saved catalogues); this instance was created with home: null';
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
    }
    const core = await this.#start(home).open(options);
    const session = new AlbedoSession(core);
    if (this.#closed) {
      await session.close();
      throw new AlbedoError('ALBEDO_CLOSED', 'this Albedo instance is closed', { outcome: 'not_run' });
    }
    this.#open.set(session.id, session);
    session.on((e) => { if (e.type === 'closed') this.#open.delete(session.id); });
    return session;
  }

  /** The open sessions, in the order they were opened. */
  list(): AlbedoSession[] {
    return [...this.#open.values()];
  }

  /** Closes every session (reaping every server). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    await this.#composer?.close();
    await Promise.allSettled([...this.#open.values()].map((s) => s.settled()));
    this.#open.clear();
  }
}
