/**
 * Reads one SSE body (eventsource-parser) and hands each JSON-RPC message
 * it carries to `deliver`. A reader stops when its body ends, when the
 * signal aborts, or as soon as `done()` says the stream has given what it
 * was opened for (a POST's response): the spec only says servers SHOULD
 * close such a stream, and one that never does must not hold a socket.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_MESSAGE_BYTES } from '../../protocol/framing.ts';

/** What a stream taught us for resuming it (legacy `Last-Event-ID`, `retry`). */
export interface StreamState {
  lastEventId: string | undefined;
  retryMs: number | undefined;
  sawEvent: boolean;
}

/** The most messages one JSON-RPC batch may carry; the rest are dropped with a warning. */
export const MAX_BATCH = 100;

export const newStreamState = (): StreamState => ({ lastEventId: undefined, retryMs: undefined, sawEvent: false });

export interface SseSink {
  deliver(message: unknown, raw: string): void;
  warn(message: string): void;
  /** The server's text, at most `max` characters, quoted for a warning with every secret cut out first. */
  quote(text: string, max: number): string;
}

type Body = AsyncIterable<Buffer | string> & { destroy(err?: Error): unknown };

const tooLarge = (): AlbedoError =>
  new AlbedoError('ALBEDO_FRAME_TOO_LARGE', `an SSE event exceeded the ${MAX_MESSAGE_BYTES}-byte cap`, { outcome: 'unknown' });

/**
 * Reads `body` to its end (or until `done()` or `signal`), delivering every
 * `message` event. Throws ALBEDO_FRAME_TOO_LARGE for an event over the cap.
 */
export async function readSse(
  body: Body,
  state: StreamState,
  signal: AbortSignal,
  sink: SseSink,
  done: () => boolean = () => false,
): Promise<void> {
  let failed: AlbedoError | undefined;
  const parser = createParser({
    maxBufferSize: MAX_MESSAGE_BYTES + 1024,
    onEvent: (e: EventSourceMessage) => {
      if (e.id !== undefined) state.lastEventId = e.id;
      state.sawEvent = true;
      if (e.event !== undefined && e.event !== 'message') return;
      // An event with an id and no data primes resumption (2025-11-25); there is nothing to deliver.
      if (e.data === '') return;
      if (Buffer.byteLength(e.data) > MAX_MESSAGE_BYTES) {
        failed = tooLarge();
        return;
      }
      let value: unknown;
      try {
        value = JSON.parse(e.data);
      } catch {
        sink.warn(`ignored an SSE event that is not JSON: ${sink.quote(e.data, 120)}`);
        return;
      }
      if (Array.isArray(value)) {
        // Batches are 2025-03-26's; a batch of thousands is a flood, not a conversation.
        if (value.length > MAX_BATCH)
          sink.warn(`an SSE event carried a batch of ${value.length} messages; only the first ${MAX_BATCH} were read`);
        for (const m of value.slice(0, MAX_BATCH)) sink.deliver(m, e.data);
      } else sink.deliver(value, e.data);
    },
    onRetry: (ms: number) => {
      state.retryMs = ms;
    },
    onError: (err) => {
      if ((err as { type?: string }).type === 'max-buffer-size-exceeded') failed = tooLarge();
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    if (signal.aborted) break;
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    if (failed) {
      body.destroy();
      throw failed;
    }
    if (done()) {
      // Its response arrived: what else the server sends here has no request to belong to.
      body.destroy();
      return;
    }
  }
}
