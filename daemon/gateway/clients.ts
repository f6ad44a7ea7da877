/**
 * Who uses a gateway now, for `albedo gateway list`, `albedo status`, the
 * screen and the pane: each 2025-era HTTP session and each stdio connection
 * is a client (named by its `initialize` clientInfo); the stateless
 * 2026-07-28 traffic has no connection to name, so it is one row per
 * client name it declares, forgotten after ten idle minutes.
 */
import { randomUUID } from 'node:crypto';

export interface GatewayClient {
  id: string;
  /** The client's own name and version, as it declared them (none before its first request says). */
  name: string | null;
  /** The protocol revision it speaks. */
  era: string;
  transport: 'http' | 'stdio';
  /** When it connected, and its last request (ms since the epoch). */
  since: number;
  lastSeen: number;
  calls: number;
}

const STATELESS_IDLE_MS = 10 * 60_000;
/** At most this many rows per gateway (the oldest stateless ones go first). */
const MAX_CLIENTS = 256;

export class ClientTable {
  #rows = new Map<string, GatewayClient & { stateless: boolean }>();

  /** A connection-bound client (a 2025 session, a stdio connection); `done()` removes it. */
  open(transport: 'http' | 'stdio', era: string): { row: GatewayClient; done: () => void } {
    const now = Date.now();
    const row = { id: randomUUID(), name: null, era, transport, since: now, lastSeen: now, calls: 0, stateless: false };
    this.#rows.set(row.id, row);
    this.#trim();
    return { row, done: () => this.#rows.delete(row.id) };
  }

  /** A stateless request from the client named `name`: its row, made or refreshed. */
  stateless(name: string | null, era: string): GatewayClient {
    const id = `stateless:${name ?? ''}:${era}`;
    const now = Date.now();
    let row = this.#rows.get(id);
    if (!row) {
      row = { id, name, era, transport: 'http', since: now, lastSeen: now, calls: 0, stateless: true };
      this.#rows.set(id, row);
      this.#trim();
    }
    row.lastSeen = now;
    return row;
  }

  list(): GatewayClient[] {
    const cutoff = Date.now() - STATELESS_IDLE_MS;
    for (const [id, r] of this.#rows) if (r.stateless && r.lastSeen < cutoff) this.#rows.delete(id);
    return [...this.#rows.values()].map(({ stateless: _s, ...r }) => ({ ...r }));
  }

  #trim(): void {
    if (this.#rows.size <= MAX_CLIENTS) return;
    for (const [id, r] of this.#rows) {
      if (r.stateless) {
        this.#rows.delete(id);
        return;
      }
    }
  }
}

/** One more call by `row`'s client. */
export function counted(row: GatewayClient): void {
  row.calls++;
  row.lastSeen = Date.now();
}

/** The name and version a client declared, as one short line (bounded: it is the client's text). */
export function clientName(info: { name?: unknown; version?: unknown } | undefined): string | null {
  if (!info || typeof info.name !== 'string') return null;
  const v = typeof info.version === 'string' ? ` ${info.version}` : '';
  return `${info.name}${v}`.slice(0, 200);
}
