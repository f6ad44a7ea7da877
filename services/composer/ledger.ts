/**
 * Which connections a composer holds in the transport, kept in LMDB before
 * each dial is sent: a composer that crashes mid-preparation leaves
 * connections no session record names, and its next incarnation closes them
 * (no server outlives its owner). Writes made in the same turn of the event
 * loop are one LMDB commit.
 */
import type { SessionRecords } from './records.ts';

export class Ledger {
  #records: SessionRecords;
  #owner: string;
  #ids: Set<string>;
  #flush: Promise<void> | undefined;

  constructor(records: SessionRecords, owner: string) {
    this.#records = records;
    this.#owner = owner;
    this.#ids = new Set(records.ledger(owner));
  }

  /** What the previous incarnation left (read at construction). */
  get ids(): string[] {
    return [...this.#ids];
  }

  #write(): Promise<void> {
    this.#flush ??= new Promise<void>((resolve) => queueMicrotask(resolve)).then(() => {
      this.#flush = undefined;
      return this.#records.setLedger(this.#owner, [...this.#ids]);
    });
    return this.#flush;
  }

  /** Resolves once `id` is on disk. */
  add(id: string): Promise<void> {
    this.#ids.add(id);
    return this.#write();
  }

  remove(id: string): Promise<void> {
    if (!this.#ids.delete(id)) return Promise.resolve();
    return this.#write();
  }
}
