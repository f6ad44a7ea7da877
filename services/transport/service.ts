/**
 * The transport service: a pool worker hosting many connection actors
 * (services/transport/connection.ts). The kernel pins each connection id to
 * one worker; a worker crash loses only the actors it held, and the kernel
 * tells their owners to open them again.
 */
import { defineService, type ServiceContext } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { Implementation } from '../../protocol/mcp.ts';
import type { OpenResult } from '../../protocol/services/transport.ts';
import type { EraCache } from '../negotiation/era-cache.ts';
import { Connection } from './connection.ts';

export interface TransportOptions {
  clientInfo: Implementation;
}

const connections = new Map<string, Connection>();
/** What each open connection was opened with (`connection/info`). */
const opens = new Map<string, OpenResult>();

let ctx: ServiceContext<'transport'>;

/**
 * The era cache's module, loaded by the first connection that has a state
 * directory: it brings LMDB (native code and tens of modules), which an
 * instance without a home never needs.
 */
let eraCaches: Promise<typeof import('../negotiation/era-cache.ts')> | undefined;
const eraCacheModule = (): Promise<typeof import('../negotiation/era-cache.ts')> => (eraCaches ??= import('../negotiation/era-cache.ts'));

function get(id: string): Connection {
  const c = connections.get(id);
  if (!c) throw new AlbedoError('ALBEDO_NOT_FOUND', `no open connection ${id} on this worker`, { outcome: 'not_run' });
  return c;
}

export default defineService('transport', {
  start(c) {
    ctx = c;
  },
  handlers: {
    async 'connection/open'(p, call) {
      // First, so that from the check of an old actor to the new one's registration nothing else waits.
      const eraCache = p.eraCachePath ? await eraCacheModule() : null;
      const old = connections.get(p.id);
      if (old) {
        connections.delete(p.id);
        opens.delete(p.id);
        await old.close();
      }
      const { clientInfo } = ctx.options as TransportOptions;
      const client = {
        capabilities: p.capabilities ?? {},
        ask: (method: string, params: unknown, timeoutMs: number, signal?: AbortSignal, key?: string, tag?: string) => {
          const q: { id: string; method: string; params: unknown; key?: string; tag?: string } = { id: p.id, method, params };
          if (key !== undefined) q.key = key;
          if (tag !== undefined) q.tag = tag;
          return ctx.call('client', 'client/input', q, { timeoutMs, signal });
        },
      };
      const cache: EraCache | null = eraCache && p.eraCachePath ? new eraCache.EraCache(p.eraCachePath) : null;
      const conn = new Connection(p.id, p.server, clientInfo, cache, (name, payload) => ctx.emit(name, payload), client, p.name);
      connections.set(p.id, conn);
      try {
        const opened = await conn.open(call.signal);
        // The caller gave up meanwhile: nobody will own this connection, so it must not stay open.
        if (call.signal.aborted)
          throw new AlbedoError('ALBEDO_DEADLINE', `connection ${p.id} opened after its caller gave up`, { outcome: 'unknown' });
        opens.set(p.id, opened);
        return opened;
      } catch (err) {
        connections.delete(p.id);
        void conn.close();
        throw err;
      }
    },
    // Not async: the connection's promise is the reply (the worker host catches a synchronous throw, as for any handler).
    'connection/request'(p, call) {
      return get(p.id).request(p.op, p.timeoutMs, call.signal);
    },
    'connection/info'(p) {
      const c = connections.get(p.id);
      const opened = opens.get(p.id);
      // Only a live one: a dropped connection is dialled again by whoever asks (a resume must not adopt a dead link).
      return c && opened && c.live ? { ...opened, catalogue: c.catalogue, warnings: [] } : null;
    },
    async 'connection/close'(p) {
      opens.delete(p.id);
      const c = connections.get(p.id);
      if (!c) return { stderrTail: '' };
      connections.delete(p.id);
      return c.close();
    },
  },
  // With fault injection on, `worker/stats` (kernel/worker-host.ts) tells how many connections this worker holds.
  stats: () => ({ connections: connections.size }),
  async stop() {
    const all = [...connections.values()];
    connections.clear();
    await Promise.allSettled(all.map((c) => c.close()));
    if (eraCaches) await (await eraCaches).closeEraCaches();
  },
});
