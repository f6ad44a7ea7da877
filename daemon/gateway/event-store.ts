/**
 * Resumption for a 2025-era gateway session: the SDK's transport stores
 * each message it sends on an SSE stream here, and a client that lost the
 * stream reconnects with `Last-Event-ID` and is sent what followed. Kept in
 * memory, the last MAX_EVENTS messages per session and no more than
 * MAX_BYTES of them (the newest is always kept): every tool result goes
 * through here, so a count alone would let a host that reads large results
 * hold gigabytes per session. A client that fell further behind gets what
 * is left (an event id no longer kept is the SDK's 400).
 */
import type { EventStore } from '@modelcontextprotocol/server';

type Message = Parameters<EventStore['storeEvent']>[1];

const MAX_EVENTS = 1_000;
/** The messages kept per session, measured as JSON text (UTF-16 units: close enough to bytes for a bound). */
export const MAX_BYTES = 8 * 1024 * 1024;

export class EventStoreMemory implements EventStore {
  #events: Array<{ id: string; stream: string; message: Message; size: number }> = [];
  #bytes = 0;
  #n = 0;

  async storeEvent(stream: string, message: Message): Promise<string> {
    const id = `${stream}_${++this.#n}`;
    const size = JSON.stringify(message)?.length ?? 0;
    this.#events.push({ id, stream, message, size });
    this.#bytes += size;
    let drop = 0;
    let bytes = this.#bytes;
    while (this.#events.length - drop > 1 && (this.#events.length - drop > MAX_EVENTS || bytes > MAX_BYTES)) {
      bytes -= this.#events[drop]!.size;
      drop++;
    }
    if (drop) {
      this.#events.splice(0, drop);
      this.#bytes = bytes;
    }
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
