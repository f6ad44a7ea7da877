/**
 * Newline-delimited JSON framing (MCP stdio transport, both eras): one
 * message per line, UTF-8, no embedded newlines. A frame larger than the cap
 * is an error for the whole connection, since the stream can no longer be
 * trusted to be in sync.
 */

/** The most bytes one message may take, in any transport (docs/design.md, "Bounds"). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export class FrameTooLargeError extends Error {
  readonly code = 'ALBEDO_FRAME_TOO_LARGE';
  readonly limit: number;
  readonly seen: number;
  constructor(limit: number, seen: number) {
    super(`a message exceeded the ${limit}-byte cap (at least ${seen} bytes in one frame)`);
    this.limit = limit;
    this.seen = seen;
  }
}

/**
 * Splits a byte stream into lines, without copying a line more than once
 * before it is decoded. `push` returns the complete lines (without the
 * newline, CR stripped) and throws FrameTooLargeError once a pending line
 * passes `limit`.
 *
 * A line within one chunk is decoded straight from it. A line that spans
 * chunks is held as the chunks themselves and gathered once, into one buffer
 * of its exact size. (Decoding each chunk as it arrives and joining the parts
 * was measured too: for a 16 MiB message it peaked higher, since 64 KiB parts
 * land in the collected heap, whose pages stay committed, while these buffers
 * live outside it and are unmapped as soon as they are collected.)
 */
export class LineDecoder {
  #chunks: Buffer[] = [];
  #pending = 0;
  readonly limit: number;

  constructor(limit = MAX_MESSAGE_BYTES) {
    this.limit = limit;
  }

  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) break;
      const size = this.#pending + nl - start;
      if (size > this.limit) throw new FrameTooLargeError(this.limit, size);
      if (this.#chunks.length === 0) {
        // The whole line is in this chunk: decoded straight from it, with no view or copy in between.
        const end = nl > start && chunk[nl - 1] === 0x0d ? nl - 1 : nl;
        if (end > start) lines.push(chunk.toString('utf8', start, end));
      } else {
        this.#chunks.push(chunk.subarray(start, nl));
        const line = Buffer.concat(this.#chunks, size);
        this.#chunks = [];
        this.#pending = 0;
        const end = size > 0 && line[size - 1] === 0x0d ? size - 1 : size;
        if (end > 0) lines.push(line.toString('utf8', 0, end));
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = start === 0 ? chunk : chunk.subarray(start);
      this.#pending += rest.length;
      if (this.#pending > this.limit) throw new FrameTooLargeError(this.limit, this.#pending);
      this.#chunks.push(rest);
    }
    return lines;
  }

  /** Bytes held for a line not yet ended. */
  get pending(): number {
    return this.#pending;
  }
}

/**
 * The JSON text of one message, without its newline. Throws FrameTooLargeError
 * if its UTF-8 form is over `limit` bytes.
 */
export function encodeMessage(message: unknown, limit = MAX_MESSAGE_BYTES): string {
  const text = JSON.stringify(message);
  // JSON.stringify escapes control characters, so the text has no raw newline. A UTF-16 code unit
  // takes at most 3 bytes in UTF-8: a text that short cannot be over the cap, and is not counted.
  if (text.length > limit || (text.length > limit / 3 && Buffer.byteLength(text) > limit)) {
    throw new FrameTooLargeError(limit, Buffer.byteLength(text));
  }
  return text;
}

/** Encodes one message as a frame (its text and a newline). Throws if it is over the cap. */
export function encodeFrame(message: unknown, limit = MAX_MESSAGE_BYTES): string {
  return encodeMessage(message, limit) + '\n';
}
