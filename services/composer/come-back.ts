/**
 * When a left-out server is probed again (docs/design.md, "Servers that come
 * back"): there is no timer. On session activity a server is probed when its
 * probe is due: first `retryMs` after the session prepared (or after the
 * server was left out, when that came later), then at doubling intervals,
 * capped at twenty times `retryMs`. Each interval counts from the activity
 * that ran the failed probe. Pure: time comes from the caller's clock.
 */

/** The interval stops doubling at this multiple of retryMs. */
export const MAX_RETRY_FACTOR = 20;

export class ComeBack {
  readonly retryMs: number;
  #interval: number;
  #dueAt: number;

  /** `since`: when the server was left out (the preparation's end for the servers it left out). */
  constructor(retryMs: number, since: number) {
    this.retryMs = retryMs;
    this.#interval = retryMs;
    this.#dueAt = since + retryMs;
  }

  /** When the next probe is due. */
  get dueAt(): number {
    return this.#dueAt;
  }

  /** The interval that led to the current due time. */
  get interval(): number {
    return this.#interval;
  }

  due(now: number): boolean {
    return now >= this.#dueAt;
  }

  /** A probe that ran at `at` found the server still down: the next one is due after the doubled interval, capped. */
  failed(at: number): void {
    this.#interval = Math.min(this.#interval * 2, MAX_RETRY_FACTOR * this.retryMs);
    this.#dueAt = at + this.#interval;
  }
}
