/**
 * What a server tells its client besides list changes, relayed to the
 * connection's owners as transport events: `notifications/progress` for a
 * request this connection sent with a progress token (`connection/progress`),
 * `notifications/message` (`connection/log`) and
 * `notifications/resources/updated` (`connection/resource-updated`). Every
 * field is checked, the server's text redacted (and cut), and each kind is
 * bounded to RATE events a second per connection: the events cross to the
 * owner's thread, and a server that floods must not swamp it (the rest are
 * dropped, silently: they are the server's own noise).
 */
import type { Redactor } from '../../protocol/redact.ts';
import type { LoggingLevel, TransportEvents } from '../../protocol/services/transport.ts';

/** Events of one kind a connection relays per second at most. */
export const NOTICE_RATE = 100;
const WINDOW_MS = 1_000;
/** The longest progress message relayed (characters, after redaction). */
const MAX_MESSAGE = 1_000;
const MAX_LOGGER = 200;
const MAX_URI = 8_192;
/** How deep a log's data may nest before it is cut. */
const LOG_DATA_DEPTH = 32;
/**
 * A log's data is relayed with at most this many characters of text (keys and strings) and this many
 * values: a server may send 16 MiB of it a hundred times a second, and each event is copied to the owner.
 */
const LOG_DATA_CHARS = 64 * 1024;
const LOG_DATA_NODES = 2_000;
/** What stands for the values past the bounds. */
const CUT = '[cut]';

export const LOGGING_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

type Emit = <E extends keyof TransportEvents>(name: E, payload: TransportEvents[E]) => void;

/** A fixed one-second window per kind of event. */
class Rate {
  #start = -Infinity;
  #count = 0;
  admit(now: number): boolean {
    if (now - this.#start >= WINDOW_MS) {
      this.#start = now;
      this.#count = 0;
    }
    return ++this.#count <= NOTICE_RATE;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * A log's data within its bounds (see LOG_DATA_CHARS): a copy whose strings, keys included, are redacted
 * before they are cut (a cut secret leaves nothing at the edge), what lies past the bounds shown as CUT.
 */
export function logData(value: unknown, redactor: Redactor): unknown {
  const left = { chars: LOG_DATA_CHARS, nodes: LOG_DATA_NODES };
  const text = (s: string): string => {
    const out = redactor.cut(s, { keep: 'head', max: Math.max(0, left.chars) });
    left.chars -= out.length;
    return out;
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return text(v);
    if (v === null || typeof v !== 'object') return v;
    if (depth >= LOG_DATA_DEPTH || --left.nodes < 0 || left.chars <= 0) return CUT;
    if (Array.isArray(v)) {
      const out: unknown[] = [];
      for (const x of v) {
        if (left.nodes <= 0 || left.chars <= 0) {
          out.push(CUT);
          break;
        }
        left.nodes--;
        out.push(walk(x, depth + 1));
      }
      return out;
    }
    const out: Record<string, unknown> = {};
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (left.nodes <= 0 || left.chars <= 0) {
        Object.defineProperty(out, CUT, { value: CUT, enumerable: true, writable: true, configurable: true });
        break;
      }
      left.nodes--;
      // The key first (its value may use up the text left); defineProperty: a `__proto__` key stays a key.
      const key = text(k);
      Object.defineProperty(out, key, {
        value: walk((v as Record<string, unknown>)[k], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  return walk(value, 0);
}

export class Notices {
  readonly #id: string;
  readonly #emit: Emit;
  readonly #redactor: Redactor;
  /** The progress tokens of this connection's requests in flight: a server's progress naming another is ignored. */
  readonly #tokens = new Map<string | number, number>();
  readonly #progress = new Rate();
  readonly #log = new Rate();
  readonly #updated = new Rate();

  constructor(id: string, emit: Emit, redactor: Redactor) {
    this.#id = id;
    this.#emit = emit;
    this.#redactor = redactor;
  }

  /** A request carrying `token` is sent: progress naming it is relayed until `untrack`. */
  track(token: string | number): void {
    this.#tokens.set(token, (this.#tokens.get(token) ?? 0) + 1);
  }

  untrack(token: string | number): void {
    const n = (this.#tokens.get(token) ?? 1) - 1;
    if (n > 0) this.#tokens.set(token, n);
    else this.#tokens.delete(token);
  }

  /** Handles `method` when it is one of ours; false for any other notification. */
  handle(method: string, params: unknown): boolean {
    switch (method) {
      case 'notifications/progress':
        this.#onProgress(params);
        return true;
      case 'notifications/message':
        this.#onLog(params);
        return true;
      case 'notifications/resources/updated':
        this.#onUpdated(params);
        return true;
      default:
        return false;
    }
  }

  #onProgress(p: unknown): void {
    if (!isRecord(p)) return;
    const token = p.progressToken;
    if ((typeof token !== 'string' && typeof token !== 'number') || !this.#tokens.has(token)) return;
    if (!finite(p.progress) || (p.total !== undefined && !finite(p.total))) return;
    if (p.message !== undefined && typeof p.message !== 'string') return;
    if (!this.#progress.admit(Date.now())) return;
    const event: TransportEvents['connection/progress'] = { id: this.#id, token, progress: p.progress };
    if (p.total !== undefined) event.total = p.total;
    if (p.message !== undefined) event.message = this.#redactor.cut(p.message, { keep: 'head', max: MAX_MESSAGE });
    this.#emit('connection/progress', event);
  }

  #onLog(p: unknown): void {
    if (!isRecord(p) || !LOGGING_LEVELS.includes(p.level as LoggingLevel) || !Object.hasOwn(p, 'data')) return;
    if (p.logger !== undefined && typeof p.logger !== 'string') return;
    if (!this.#log.admit(Date.now())) return;
    const event: TransportEvents['connection/log'] = {
      id: this.#id,
      level: p.level as LoggingLevel,
      data: logData(p.data, this.#redactor),
    };
    if (p.logger !== undefined) event.logger = this.#redactor.cut(p.logger, { keep: 'head', max: MAX_LOGGER });
    this.#emit('connection/log', event);
  }

  #onUpdated(p: unknown): void {
    if (!isRecord(p) || typeof p.uri !== 'string' || !p.uri || p.uri.length > MAX_URI) return;
    if (!this.#updated.admit(Date.now())) return;
    this.#emit('connection/resource-updated', { id: this.#id, uri: p.uri });
  }
}
