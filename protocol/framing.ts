/**
 * Newline-delimited JSON framing (MCP stdio transport, both eras): one
 * message per line, UTF-8, no embedded newlines. A frame larger than the cap
 * is an error for the whole connection, since the stream can no longer be
 * trusted to be in sync.
 */

/** The most bytes one message may take, in any transport (seed 000). */
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
 * Splits a byte stream into lines, without copying a line more than once.
 * `push` returns the complete lines (without the newline, CR stripped) and
 * throws FrameTooLargeError once a pending line passes `limit`.
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
      const piece = chunk.subarray(start, nl);
      if (this.#pending + piece.length > this.limit) throw new FrameTooLargeError(this.limit, this.#pending + piece.length);
      let line: Buffer;
      if (this.#chunks.length === 0) line = piece;
      else {
        this.#chunks.push(piece);
        line = Buffer.concat(this.#chunks, this.#pending + piece.length);
        this.#chunks = [];
        this.#pending = 0;
      }
      const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
      if (end > 0) lines.push(line.toString('utf8', 0, end));
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
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

/** Encodes one message as a frame. Throws if it is over the cap. */
export function encodeFrame(message: unknown, limit = MAX_MESSAGE_BYTES): string {
  const text = JSON.stringify(message);
  // JSON.stringify escapes control characters, so the text has no raw newline.
  if (text.length > limit || Buffer.byteLength(text) > limit) throw new FrameTooLargeError(limit, Buffer.byteLength(text));
  return text + '\n';
}
