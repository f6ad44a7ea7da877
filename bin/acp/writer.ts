/**
 * The editor side's writer: JSON-RPC lines to stdout, with a bound on what is
 * pending. An editor that stops reading must not make the adapter hold an
 * agent's output without end (an agent can stream megabytes of updates), and a
 * blocked write must never stop the adapter from reading the agent: Node's
 * pipe writes do not block, they queue, so the queue's length is the measure.
 * A write finding more than the bound waiting behind the message the editor is
 * taking now, or a write error (EPIPE: the editor is gone), cuts the editor
 * side: nothing more is written, stdout is closed, and `onCut` says why; later
 * writes are dropped quietly (the adapter still reads the agent). The bound is
 * on what waits behind that one message, not on the message in hand: one
 * message larger than the bound (the ACP SDK takes lines up to 32 MiB) goes to
 * an editor that reads, and so do the messages right after it while the editor
 * takes it. At most the message being taken, the bound and one more message wait.
 */
import type { Writable } from 'node:stream';

/** The most bytes of output that may wait for the editor behind the message it is taking. */
export const WRITER_BOUND = 4 * 1024 * 1024;

export type CutReason = 'overflow' | 'error';

export class BoundedWriter {
  #sink: Writable;
  #bound: number;
  #onCut: (why: CutReason) => void;
  #cut: CutReason | null = null;
  /** The sizes of the chunks handed to the sink whose write has not completed, oldest (the one being taken) first. */
  #queued: number[] = [];
  #queuedBytes = 0;

  constructor(sink: Writable, onCut: (why: CutReason) => void, bound = WRITER_BOUND) {
    this.#sink = sink;
    this.#bound = bound;
    this.#onCut = onCut;
    sink.on('error', () => this.cut('error'));
  }

  /** Why the editor side was cut, or null while it is open. */
  get cutReason(): CutReason | null {
    return this.#cut;
  }

  /** Bytes handed to the sink and not yet taken by the editor. */
  get pending(): number {
    return this.#sink.writableLength;
  }

  /** Queues one chunk; never waits (more than the bound waiting behind the chunk being taken cuts the editor side). */
  write(chunk: Uint8Array): void {
    if (this.#cut) return;
    if (this.#queuedBytes - (this.#queued[0] ?? 0) > this.#bound) return this.cut('overflow');
    this.#queued.push(chunk.length);
    this.#queuedBytes += chunk.length;
    // Write callbacks come in order: each one's completion takes the oldest size off.
    this.#sink.write(chunk, (err) => {
      this.#queuedBytes -= this.#queued.shift() ?? 0;
      if (err) this.cut('error');
    });
  }

  /** Stops writing for good and closes the sink (queued bytes are dropped). */
  cut(why: CutReason): void {
    if (this.#cut) return;
    this.#cut = why;
    this.#sink.destroy();
    this.#onCut(why);
  }

  /** The writer as the web stream the ACP SDK's ndJsonStream writes to: its writes resolve at once. */
  stream(): WritableStream<Uint8Array> {
    return new WritableStream<Uint8Array>({ write: (chunk) => this.write(chunk) });
  }

  /** Resolves when everything queued has been taken by the editor (or at once when cut). */
  flushed(): Promise<void> {
    if (this.#cut || this.#sink.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => this.#sink.write('', () => resolve()));
  }
}
