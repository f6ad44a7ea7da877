/**
 * The session composer: opens sessions over the ports it is given and
 * dispatches the transport's events (by connection id) to the connection
 * they are about, to every session holding it. Each session holds one
 * connection per server it composes; a server marked `share` has one
 * connection for all sessions under the same fingerprint and capabilities
 * (shared-port.ts). A worker service wraps this with thin adapters.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { describeZodError } from '../../protocol/config.ts';
import { sessionOptionsSchema, type SessionEvent, type SessionOptions } from '../../protocol/composer.ts';
import type { ComposerPorts, TransportEvent } from './ports.ts';
import { sharedPort } from './shared-port.ts';
import { SchemaCache } from '../catalogue/schema-cache.ts';
import { Session, type SessionResume } from './session.ts';
import type { Upstream } from './upstream.ts';
import { overlayKey } from './overlay.ts';

export class Composer {
  #ports: ComposerPorts;
  /** The Upstreams of each connection id: one, or every session's for a shared connection (shared-port.ts). */
  #byId = new Map<string, Set<Upstream>>();
  #sessions = new Map<string, Session>();
  #unsubscribe: () => void;
  #closed = false;
  /** The normaliser's answers, shared by the sessions: a schema is normalised once per profile. */
  #schemas: SchemaCache;
  /** Random per composer (so per incarnation of its worker): the overlays' digests are HMACs under it. */
  #overlayKey = overlayKey();

  constructor(ports: ComposerPorts) {
    const holders = (id: string): number => {
      let n = 0;
      for (const up of this.#byId.get(id) ?? []) if (up.state !== 'closed') n++;
      return n;
    };
    this.#ports = { ...ports, transport: sharedPort(ports.transport, holders) };
    this.#schemas = new SchemaCache(ports.normaliseMany ? { batch: ports.normaliseMany } : ports.normalise);
    this.#unsubscribe = ports.transport.subscribe((e) => this.#onTransport(e));
  }

  /** A connection's event reaches every session holding it (each refreshes after its own turn). */
  #onTransport(e: TransportEvent): void {
    const each = (id: string, fn: (up: Upstream) => void): void => {
      for (const up of [...(this.#byId.get(id) ?? [])]) fn(up);
    };
    switch (e.type) {
      case 'dropped':
        each(e.id, (up) => up.onDropped(e.error));
        return;
      case 'catalogue-changed':
        each(e.id, (up) => up.onCatalogue(e.catalogue));
        return;
      case 'warned':
        each(e.id, (up) => up.owner.warned(e.message, e.code));
        return;
      case 'lost':
        // The actors are gone with their worker: the next call opens them again.
        for (const id of e.ids) each(id, (up) => up.onDropped(e.error, true));
    }
  }

  /**
   * Opens a session: validates its options, prepares its composition and
   * resolves once the session is ready to advertise (servers without a saved
   * catalogue have been dialled; the others dial in the background).
   * `listener` sees the events of the preparation too. Bad options reject
   * with ALBEDO_INVALID_ARGUMENT, bad configuration with the settings' error.
   */
  async open(
    options: SessionOptions = {},
    listener?: (event: SessionEvent) => void,
    restore?: { id: string; resume: SessionResume },
  ): Promise<Session> {
    if (this.#closed) throw new AlbedoError('ALBEDO_CLOSED', 'the composer is closed', { outcome: 'not_run' });
    const parsed = sessionOptionsSchema.safeParse(options);
    if (!parsed.success)
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `session options: ${describeZodError(parsed.error)}`, { outcome: 'not_run' });
    const o = parsed.data;
    const profile = o.profile ?? 'portable';
    if (this.#ports.profiles && !this.#ports.profiles.includes(profile)) {
      const known = this.#ports.profiles.join(', ');
      throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `session options: unknown profile ${JSON.stringify(profile)} (one of ${known})`, {
        outcome: 'not_run',
      });
    }
    const id = restore?.id ?? (this.#ports.newId ?? (() => crypto.randomUUID()))();
    const session = new Session(
      this.#ports,
      {
        schemas: this.#schemas,
        overlayKey: this.#overlayKey,
        register: (up) => {
          const all = this.#byId.get(up.id);
          if (all) all.add(up);
          else this.#byId.set(up.id, new Set([up]));
        },
        unregister: (up) => {
          const all = this.#byId.get(up.id);
          if (all?.delete(up) && all.size === 0) this.#byId.delete(up.id);
        },
        closed: (s) => this.#sessions.delete(s.id),
      },
      {
        id,
        choice: { include: o.servers?.include, exclude: o.servers?.exclude },
        profile,
        mcp: o.extensions?.mcp,
        editorMcp: o.extensions?.['editor-mcp'],
        options: o,
        resume: restore?.resume,
      },
      listener,
    );
    this.#sessions.set(id, session);
    await session.open();
    return session;
  }

  /** The open sessions. */
  get sessions(): Session[] {
    return [...this.#sessions.values()];
  }

  session(id: string): Session | undefined {
    return this.#sessions.get(id);
  }

  /** Closes every session (reaping every server) and stops following the transport. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.sessions.map((s) => s.close()));
    this.#unsubscribe();
  }
}
