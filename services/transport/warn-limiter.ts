/**
 * Rate-limits warnings about one connection's input: a server that floods
 * us with junk gets a few warnings a minute, then one line saying how many
 * were suppressed, never one warning per message.
 */

/** At most this many warnings per window; the rest are counted. */
const PER_WINDOW = 3;
const WINDOW_MS = 60_000;

export class WarnLimiter {
  #windowStart = -Infinity;
  #shown = 0;
  #suppressed = 0;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * The text to warn with now (with a note of what was suppressed before), or undefined to stay quiet.
   * `message` may be a function: it is called only when the warning is shown.
   */
  admit(message: string | (() => string)): string | undefined {
    const now = this.#now();
    if (now - this.#windowStart >= WINDOW_MS) {
      this.#windowStart = now;
      this.#shown = 0;
    }
    if (this.#shown >= PER_WINDOW) {
      this.#suppressed++;
      return undefined;
    }
    this.#shown++;
    if (typeof message === 'function') message = message();
    if (!this.#suppressed) return message;
    const note = ` (${this.#suppressed} similar warning(s) suppressed before this one)`;
    this.#suppressed = 0;
    return message + note;
  }

  /** Warnings held back since the last one shown. */
  get suppressed(): number {
    return this.#suppressed;
  }
}
