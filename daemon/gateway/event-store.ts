/**
 * Resumption for a 2025-era gateway session: the SDK's transport stores
 * each message it sends on an SSE stream here, and a client that lost the
 * stream reconnects with `Last-Event-ID` and is sent what followed. Kept in
 * memory, the last MAX_EVENTS messages per session (a client that fell
 * further behind gets what is left).
 */
import type { EventStore } from '@modelcontextprotocol/server';

type Message = Parameters<EventStore['storeEvent']>[1];

const MAX_EVENTS = 1_000;

export class EventStoreMemory implements EventStore {
  #events: Array<{ id: string; stream: string; message: Message }> = [];
  #n = 0;

  async storeEvent(stream: string, message: Message): Promise<string> {
    const id = `${stream}_${++this.#n}`;
    this.#events.push({ id, stream, message });
    if (this.#events.length > MAX_EVENTS) this.#events.splice(0, this.#events.length - MAX_EVENTS);
    return id;
  }

  async getStreamIdForEventId(id: string): Promise<string | undefined> {
    return this.#events.find((e) => e.id === id)?.stream;
  }

  async replayEventsAfter(last: string, { send }: { send: (id: string, message: Message) => Promise<void> }): Promise<string> {
    const at = this.#events.findIndex((e) => e.id === last);
    if (at < 0) return '';
    const stream = this.#events[at]!.stream;
    for (const e of this.#events.slice(at + 1)) if (e.stream === stream) await send(e.id, e.message);
    return stream;
  }
}
