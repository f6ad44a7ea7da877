/**
 * What `albedo gateway` knows of the MCP stream it copies, so that a daemon
 * restart does not end the host's server: the stream cut into whole lines
 * (a line is one JSON-RPC message in MCP's stdio binding, so nothing half
 * sent reaches either side), the host's requests still waiting for an
 * answer (answered with an error when the daemon goes), and the host's
 * opening (`initialize`, or a 2026-07-28 `server/discover`, once answered,
 * and `notifications/initialized`) to say again to the next daemon.
 *
 * The daemon's lines are read only as far as their id: a whole parse for
 * small ones, the head and tail for large ones (a large line is a result).
 */

export type RpcId = string | number;

/** Lines parsed whole from the daemon up to this size; beyond, only the head and tail are looked at. */
const PARSE_MAX = 256 * 1024;
const EDGE = 256;
const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
const HEAD_RESPONSE = new RegExp(String.raw`^\{"jsonrpc":"2\.0","id":${ID},"(?:result|error)":`);
const HEAD_RESULT_FIRST = /^\{"(?:result|error)":/;
const TAIL_ID = new RegExp(String.raw`"jsonrpc":"2\.0","id":${ID}\}$`);

const keyOf = (id: RpcId): string => (typeof id === 'number' ? `n${id}` : `s${id}`);
const isId = (v: unknown): v is RpcId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** A byte stream cut at newlines: what is whole, as one block to pass on and as lines; the rest is held. */
export class LineSplitter {
  #held: Buffer[] = [];
  #heldBytes = 0;

  /** The whole lines `chunk` completes (null: none yet): `block` ends in a newline, `lines` are without it. */
  push(chunk: Buffer): { block: Buffer; lines: Buffer[] } | null {
    const last = chunk.lastIndexOf(10);
    if (last < 0) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      return null;
    }
    const whole = chunk.subarray(0, last + 1);
    const block = this.#held.length ? Buffer.concat([...this.#held, whole]) : whole;
    const rest = chunk.subarray(last + 1);
    this.#held = rest.length ? [rest] : [];
    this.#heldBytes = rest.length;
    const lines: Buffer[] = [];
    let start = 0;
    for (let i = block.indexOf(10); i >= 0; i = block.indexOf(10, start)) {
      lines.push(block.subarray(start, i));
      start = i + 1;
    }
    return { block, lines };
  }

  /** Bytes held for a line not yet ended. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** What is held, taken out (a line cut by the end of its stream). */
  take(): Buffer {
    const b = Buffer.concat(this.#held);
    this.#held = [];
    this.#heldBytes = 0;
    return b;
  }
}

/** The id of a response (result or error) in a line of the daemon's, else undefined (a request, a notification). */
export function responseId(line: Buffer): RpcId | undefined {
  if (line.length <= PARSE_MAX) {
    try {
      const m = JSON.parse(line.toString('utf8')) as Record<string, unknown> | null;
      if (m && typeof m === 'object' && m.method === undefined && isId(m.id) && ('result' in m || 'error' in m)) return m.id;
    } catch {
      /* not JSON: nothing to track */
    }
    return undefined;
  }
  const head = line.subarray(0, EDGE).toString('latin1');
  const found = HEAD_RESPONSE.exec(head) ?? (HEAD_RESULT_FIRST.test(head) ? TAIL_ID.exec(line.subarray(-EDGE).toString('latin1')) : null);
  return found ? (JSON.parse(found[1]!) as RpcId) : undefined;
}

/** The host's side of the stream: requests in flight and the opening to say again. */
export class HostRequests {
  #pending = new Map<string, RpcId>();
  /** The opening request sent, not yet answered. */
  #opening: { id: RpcId; message: Record<string, unknown> } | null = null;
  /** The opening the daemon answered (what a new daemon is told again). */
  #opened: Record<string, unknown> | null = null;
  #initialized: Buffer | null = null;

  /** A line the host sent. */
  host(line: Buffer): void {
    let m: unknown;
    try {
      m = JSON.parse(line.toString('utf8'));
    } catch {
      return;
    }
    if (!m || typeof m !== 'object' || Array.isArray(m)) return;
    const msg = m as Record<string, unknown>;
    if (typeof msg.method !== 'string') return;
    if (isId(msg.id)) {
      this.#pending.set(keyOf(msg.id), msg.id);
      if (msg.method === 'initialize' || msg.method === 'server/discover') this.#opening = { id: msg.id, message: msg };
    } else if (msg.method === 'notifications/initialized') {
      this.#initialized = Buffer.concat([line, Buffer.from('\n')]);
    }
  }

  /** A line the daemon sent: an answer ends its request's wait. */
  daemon(line: Buffer): void {
    const id = responseId(line);
    if (id === undefined) return;
    this.#pending.delete(keyOf(id));
    if (this.#opening && keyOf(this.#opening.id) === keyOf(id)) {
      this.#opened = this.#opening.message;
      this.#opening = null;
    }
  }

  /** The requests still waiting, taken out (each is then answered with an error). */
  takePending(): RpcId[] {
    const ids = [...this.#pending.values()];
    this.#pending.clear();
    this.#opening = null;
    return ids;
  }

  /** The opening to say again under `id` (null: the host opened nothing yet), and its initialized notification. */
  replay(id: string): { opening: Buffer; initialized: Buffer | null } | null {
    if (!this.#opened) return null;
    return { opening: Buffer.from(JSON.stringify({ ...this.#opened, id }) + '\n'), initialized: this.#initialized };
  }
}

/** The answer to a request the daemon went away under: it may have run (a tool call's effects are not known). */
export function lostAnswer(id: RpcId): Buffer {
  const error = {
    code: -32603,
    message: 'the Albedo daemon went away during this request; it may or may not have run',
    data: { code: 'ALBEDO_DAEMON_UNREACHABLE', outcome: 'unknown' },
  };
  return Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, error }) + '\n');
}
