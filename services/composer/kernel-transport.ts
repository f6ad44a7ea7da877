/**
 * The transport port over a kernel on this thread: connection/open,
 * connection/request and connection/close keyed by connection id (as
 * api/connection.ts calls them), and the transport's events plus the
 * kernel's service/lost as TransportEvents. A composer running inside a
 * worker needs another adapter (its calls go through ctx.call, and events
 * must be forwarded to it); the port stays the same.
 */
import type { Kernel } from '../../kernel/kernel.ts';
import { AlbedoError, deserializeError } from '../../protocol/errors.ts';
import type { TransportPort } from './ports.ts';

/** Kernel deadline slack over the MCP request's own timeout, so the worker's timeout (which cancels on the wire) fires first. */
const KERNEL_SLACK_MS = 2_000;

export interface KernelTransportOptions {
  /** The LMDB environment of the era cache ($ALBEDO_HOME/store), or null. */
  eraCachePath: string | null;
  /** The client capabilities declared to servers (none: input requests fail with ALBEDO_INPUT_REQUIRED). */
  capabilities?: Record<string, unknown>;
}

export function kernelTransport(kernel: Kernel, opts: KernelTransportOptions): TransportPort {
  const capabilities = opts.capabilities ?? {};
  return {
    async open(id, server, o) {
      try {
        // Negotiation and discovery each have the startup budget inside the worker.
        return await kernel.call('transport', 'connection/open', { id, server, eraCachePath: opts.eraCachePath, capabilities, name: o.name },
          { key: id, isolate: o.isolate, timeoutMs: server.startupTimeoutMs * 2 + 5_000 });
      } catch (err) {
        await kernel.release('transport', id);
        throw err;
      }
    },
    request(id, op, o) {
      // A dropped server is dialled again inside the worker, within the startup budget.
      return kernel.call('transport', 'connection/request', { id, op, timeoutMs: o.timeoutMs },
        { key: id, timeoutMs: o.timeoutMs + o.startupTimeoutMs + KERNEL_SLACK_MS, signal: o.signal });
    },
    async close(id) {
      try {
        await kernel.call('transport', 'connection/close', { id }, { key: id, timeoutMs: 15_000 });
      } catch {
        // A lost worker took the server with it (its launcher saw the lifeline close).
      }
      await kernel.release('transport', id);
    },
    subscribe(listener) {
      const offs = [
        kernel.on('transport', 'connection/dropped', (e) => listener({ type: 'dropped', id: e.id, error: deserializeError(e.error) })),
        kernel.on('transport', 'connection/catalogue-changed', (e) => listener({ type: 'catalogue-changed', id: e.id, catalogue: e.catalogue })),
        kernel.on('transport', 'connection/warned', (e) =>
          listener(e.code ? { type: 'warned', id: e.id, message: e.message, code: e.code } : { type: 'warned', id: e.id, message: e.message })),
        kernel.on('kernel', 'service/lost', (e) => {
          if (e.service !== 'transport' || !e.keys.length) return;
          const why = `the transport worker was lost (${e.cause ?? e.reason}); the next call reconnects`;
          const error = new AlbedoError('ALBEDO_SERVICE_LOST', why, { outcome: 'unknown' });
          listener({ type: 'lost', ids: e.keys, error });
        }),
      ];
      return () => { for (const off of offs) off(); };
    },
  };
}
