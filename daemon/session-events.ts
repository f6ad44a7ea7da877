/**
 * The events of each daemon session as the API streams them (Server-Sent
 * Events on `GET /v1/sessions/{id}/events`): numbered per session from 1, the
 * last REPLAY_MAX kept so a client that reconnects with `Last-Event-ID` gets
 * what it missed. An id is `<epoch>-<n>`: the epoch is drawn per log, so per
 * session and daemon run — a daemon restarted under a restored session
 * numbers from 1 again, and a client resuming with an id of the previous
 * run (another epoch) gets everything kept rather than missing the new
 * run's first events. Names are the API's: `server_state`, `warning`,
 * `capabilities_changed` (with the "capabilities changed" user-turn text),
 * `catalogue_refreshed` (one per server whose catalogue changed in it),
 * `server_probed`, `session_closed`.
 */
import { randomInt } from 'node:crypto';
import type { SessionEvent } from '../protocol/composer.ts';

/** How many events per session are kept for replay. */
export const REPLAY_MAX = 500;

export interface ApiEvent {
  /** `<epoch>-<seq>`, the SSE `id`. */
  id: string;
  /** 1, 2, … within the epoch. */
  seq: number;
  event: string;
  data: Record<string, unknown>;
}

/** A fresh epoch: 8 base36 characters. */
function newEpoch(): string {
  return randomInt(36 ** 8)
    .toString(36)
    .padStart(8, '0');
}

/** A session event as the API names it (one session event may be several API events). */
export function apiEvents(e: SessionEvent): Array<Omit<ApiEvent, 'id' | 'seq'>> {
  switch (e.type) {
    case 'state':
      return [
        {
          event: 'server_state',
          data: e.reason ? { server: e.server, state: e.state, reason: e.reason } : { server: e.server, state: e.state },
        },
      ];
    case 'warning': {
      const data: Record<string, unknown> = { message: e.message };
      if (e.server !== undefined) data.server = e.server;
      if (e.code !== undefined) data.code = e.code;
      return [{ event: 'warning', data }];
    }
    case 'refreshed':
      return [
        { event: 'capabilities_changed', data: { generation: e.generation, text: e.text, servers: e.servers, changes: e.changes } },
        ...e.changes
          .filter((c) => c.change === 'changed')
          .map((c) => ({ event: 'catalogue_refreshed', data: { server: c.server, generation: e.generation } })),
      ];
    case 'probed': {
      const data: Record<string, unknown> = { server: e.server, ok: e.ok, at: e.at };
      if (e.nextProbeAt !== undefined) data.nextProbeAt = e.nextProbeAt;
      return [{ event: 'server_probed', data }];
    }
    case 'closed':
      return [{ event: 'session_closed', data: {} }];
  }
}

type Subscriber = (e: ApiEvent) => void;

/** One session's numbered events and who is streaming them. */
export class EventLog {
  readonly epoch = newEpoch();
  /** How many events are kept for replay, and so how far a subscriber may fall behind before its stream is ended. */
  readonly replayMax = REPLAY_MAX;
  #events: ApiEvent[] = [];
  #next = 1;
  #subscribers = new Set<Subscriber>();
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  push(e: SessionEvent): void {
    for (const a of apiEvents(e)) {
      const seq = this.#next++;
      const numbered: ApiEvent = { id: `${this.epoch}-${seq}`, seq, ...a };
      this.#events.push(numbered);
      if (this.#events.length > REPLAY_MAX) this.#events.shift();
      for (const fn of this.#subscribers) fn(numbered);
    }
    if (e.type === 'closed') this.#closed = true;
  }

  /**
   * The kept events after `lastId`: all kept ones when it is absent, not an
   * id of this log's epoch (another daemon run's, or unparsable), or names
   * an event not numbered yet.
   */
  since(lastId: string | undefined): ApiEvent[] {
    const m = lastId === undefined ? null : /^([0-9a-z]{8})-([1-9][0-9]{0,15})$/.exec(lastId);
    const n = m && m[1] === this.epoch ? Number(m[2]) : 0;
    return n > 0 && n < this.#next ? this.#events.filter((e) => e.seq > n) : [...this.#events];
  }

  subscribe(fn: Subscriber): () => void {
    this.#subscribers.add(fn);
    return () => this.#subscribers.delete(fn);
  }
}
