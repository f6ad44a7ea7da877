/**
 * The transport port over any caller that reaches the transport service
 * through the kernel: the kernel itself on its own thread, or a service
 * worker's context (the composer service). connection/open, request, info
 * and close are keyed by connection id; the transport's events and the
 * kernel's service/lost become TransportEvents (`transportEvent`).
 */
import { AlbedoError, deserializeError } from '../../protocol/errors.ts';
import type { MethodOf, ParamsOf, ResultOf, ServiceName, Topic, TopicPayload } from '../../protocol/services/maps.ts';
import type { TransportEvent, TransportPort } from './ports.ts';

/** Kernel deadline slack over the MCP request's own timeout, so the worker's timeout (which cancels on the wire) fires first. */
const KERNEL_SLACK_MS = 2_000;

export interface CallOpts {
  timeoutMs: number;
  key?: string;
  isolate?: boolean;
  signal?: AbortSignal;
}

/** What the port needs of the kernel (or a worker's context): keyed calls, and releasing a key once its actor is closed. */
export interface ServiceCaller {
  call<T extends ServiceName, M extends MethodOf<T>>(
    service: T,
    method: M,
    params: ParamsOf<T, M>,
    opts: CallOpts,
  ): Promise<ResultOf<T, M>>;
  release(service: ServiceName, key: string): void | Promise<void>;
}

export interface TransportPortOptions {
  /** The LMDB environment of the era cache ($ALBEDO_HOME/store), or null. */
  eraCachePath: string | null;
  /** The client capabilities declared to servers (none: input requests fail with ALBEDO_INPUT_REQUIRED). */
  capabilities?: Record<string, unknown>;
}

/** The topics a composer follows (ServiceSpec.subscribe), mapped by `transportEvent`. */
export const TRANSPORT_TOPICS = [
  'transport:connection/dropped',
  'transport:connection/catalogue-changed',
  'transport:connection/warned',
  'kernel:service/lost',
] as const satisfies readonly Topic[];
export type TransportTopic = (typeof TRANSPORT_TOPICS)[number];

/** The topics the composer's spec subscribes to (here, not in service.ts, so the API names them without loading the composer). */
export const COMPOSER_TOPICS: Topic[] = [...TRANSPORT_TOPICS, 'settings:settings/changed', 'settings:settings/invalid'];

/** Each topic's event as the composer's TransportEvent; null for one that is not about transport connections. */
const asTransportEvent: { [T in TransportTopic]: (payload: TopicPayload<T>) => TransportEvent | null } = {
  'transport:connection/dropped': (p) => ({ type: 'dropped', id: p.id, error: deserializeError(p.error) }),
  'transport:connection/catalogue-changed': (p) => ({ type: 'catalogue-changed', id: p.id, catalogue: p.catalogue }),
  'transport:connection/warned': (p) =>
    p.code ? { type: 'warned', id: p.id, message: p.message, code: p.code } : { type: 'warned', id: p.id, message: p.message },
  'kernel:service/lost': (p) => {
    if (p.service !== 'transport' || !p.keys?.length) return null;
    const why = `the transport worker was lost (${p.cause ?? p.reason}); the next call reconnects`;
    return { type: 'lost', ids: p.keys, error: new AlbedoError('ALBEDO_SERVICE_LOST', why, { outcome: 'unknown' }) };
  },
};

/** A forwarded event as the composer's TransportEvent; null for one that is not about transport connections. */
export function transportEvent<T extends TransportTopic>(topic: T, payload: TopicPayload<T>): TransportEvent | null {
  return asTransportEvent[topic](payload);
}

export function transportPort(
  caller: ServiceCaller,
  subscribe: (listener: (event: TransportEvent) => void) => () => void,
  opts: TransportPortOptions,
): TransportPort {
  const capabilities = opts.capabilities ?? {};
  const release = async (id: string): Promise<void> => {
    await caller.release('transport', id);
  };
  return {
    async open(id, server, o) {
      try {
        // Negotiation and discovery each have the startup budget inside the worker.
        const params = { id, server, eraCachePath: opts.eraCachePath, capabilities: o.capabilities ?? capabilities, name: o.name };
        const timeoutMs = server.startupTimeoutMs * 2 + 5_000;
        return await caller.call('transport', 'connection/open', params, { key: id, isolate: o.isolate, timeoutMs });
      } catch (err) {
        await release(id);
        throw err;
      }
    },
    request(id, op, o) {
      // A dropped server is dialled again inside the worker, within the startup budget.
      const timeoutMs = o.timeoutMs + o.startupTimeoutMs + KERNEL_SLACK_MS;
      return caller.call('transport', 'connection/request', { id, op, timeoutMs: o.timeoutMs }, { key: id, timeoutMs, signal: o.signal });
    },
    async info(id) {
      return caller.call('transport', 'connection/info', { id }, { key: id, timeoutMs: 15_000 });
    },
    async close(id) {
      try {
        await caller.call('transport', 'connection/close', { id }, { key: id, timeoutMs: 15_000 });
      } catch {
        // A lost worker took the server with it (its launcher saw the lifeline close).
      }
      await release(id);
    },
    subscribe,
  };
}
