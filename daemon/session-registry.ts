/**
 * The daemon's sessions: each AlbedoSession it opened (or restored after a
 * restart under the daemon's owner) with its numbered event log, from the
 * moment it is known, so a client that subscribes late or reconnects still
 * gets what it missed.
 */
import type { AlbedoSession, Sessions } from '../api/sessions.ts';
import type { SessionOptions } from '../protocol/composer.ts';
import { ApiError } from './errors.ts';
import { EventLog } from './session-events.ts';

export interface Entry {
  session: AlbedoSession;
  log: EventLog;
}

export class SessionRegistry {
  #sessions: Sessions;
  #entries = new Map<string, Entry>();

  constructor(sessions: Sessions) {
    this.#sessions = sessions;
  }

  #add(session: AlbedoSession): Entry {
    const had = this.#entries.get(session.id);
    if (had) return had;
    const entry: Entry = { session, log: new EventLog() };
    this.#entries.set(session.id, entry);
    session.on((e) => {
      entry.log.push(e);
      if (e.type === 'closed') this.#entries.delete(session.id);
    });
    return entry;
  }

  /** Takes in the sessions the composer restored from the daemon's records. */
  async restore(): Promise<number> {
    const restored = await this.#sessions.restored();
    for (const s of restored) this.#add(s);
    return restored.length;
  }

  async open(options: SessionOptions): Promise<Entry> {
    return this.#add(await this.#sessions.open(options));
  }

  /** The session `id`, or a 404. */
  get(id: string): Entry {
    const e = this.#entries.get(id);
    if (!e || e.session.closed) throw new ApiError(404, 'ALBEDO_NOT_FOUND', 'no open session has this id', { path: ['params', 'id'] });
    return e;
  }

  list(): Entry[] {
    return [...this.#entries.values()].filter((e) => !e.session.closed);
  }
}
