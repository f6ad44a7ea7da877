/**
 * What a server says besides JSON-RPC: lines on stdout that are not JSON-RPC
 * (counted, the first one kept, quoted — redacted, then cut) and, for a stdio
 * server, the end of its stderr. Both explain a server that does not answer
 * (the handshake's timeout) or does not start (a failed open's data, for a
 * person's message of why: daemon/strict-save.ts).
 */
import { AlbedoError } from '../../protocol/errors.ts';

export class ServerNoise {
  /** How many lines were not JSON-RPC. */
  count = 0;
  /** The first of them, quoted. */
  sample = '';
  #quote: (text: string, max: number) => string;

  /** `quote` quotes the server's text, at most `max` characters, its secrets cut out first. */
  constructor(quote: (text: string, max: number) => string) {
    this.#quote = quote;
  }

  /** Counts one line that is not JSON-RPC. */
  junk(line: string): void {
    this.count++;
    if (this.count === 1) this.sample = this.#quote(line, 120);
  }

  /** Why the server may be silent: its lines that are not JSON-RPC, and how its stderr ends (empty when none). */
  silenceHint(stderrTail: string): string {
    const parts: string[] = [];
    if (this.count) parts.push(`it wrote ${this.count} line(s) that are not JSON-RPC, the first: ${this.sample}`);
    const tail = stderrTail.trim();
    if (tail) parts.push(`its stderr ends:\n${tail}`);
    return parts.join('; ');
  }

  /**
   * A failed open's error with what a stdio server said on the side, in its `data` (unless there already): its stderr
   * tail (when it wrote any), and how many lines on stdout were not JSON-RPC with the first one. `stderrTail` is
   * undefined when no stdio link was dialled (then the error is left as it is). Redacted with the rest of the data
   * as it leaves.
   */
  lastWords(err: unknown, stderrTail: string | undefined): unknown {
    if (!AlbedoError.is(err) || stderrTail === undefined) return err;
    const data = err.data;
    if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) return err;
    const more: Record<string, unknown> = {};
    // Only when it wrote something: an error's data stays as its code defines it otherwise.
    if (!(data && 'stderrTail' in data) && stderrTail) more.stderrTail = stderrTail;
    if (this.count) more.stdoutJunk = { lines: this.count, first: this.sample };
    Object.defineProperty(err, 'data', { value: { ...data, ...more }, enumerable: true, writable: true, configurable: true });
    return err;
  }
}
