/**
 * The composer's ports inside its service worker: settings, saved
 * catalogues, the normaliser and the transport, each over the worker's
 * context (every call goes through the kernel to the service that owns it),
 * plus the owner's `host/drain`. Saved-catalogue lookups made in the same
 * turn of the event loop go as one `catalogue/current` call.
 */
import type { ServiceContext } from '../../kernel/service.ts';
import type { NormaliseResult, SavedCatalogue } from '../../protocol/catalogue.ts';
import { choiceParams, resolvedServers } from './kernel-settings.ts';
import type { CataloguePort, ComposerPorts, SettingsPort, TransportEvent } from './ports.ts';
import { transportPort, type TransportPortOptions } from './transport-port.ts';
import type { Ledger } from './ledger.ts';
import { AlbedoError } from '../../protocol/errors.ts';

/** A read the settings or catalogue service can answer again: its worker was lost or restarting, and reads change nothing. */
async function again<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (!AlbedoError.is(err) || (err.code !== 'ALBEDO_SERVICE_LOST' && err.code !== 'ALBEDO_SERVICE_FAILED')) throw err;
    return read();
  }
}

/** How long a resolution or a catalogue lookup may take (no network; a worker restarting is what they may wait for). */
const LOCAL_TIMEOUT_MS = 15_000;
/** How long a retired connection waits for the direct calls on it (the longest a call may run, with its startup). */
const DRAIN_TIMEOUT_MS = 600_000;

export function workerSettings(ctx: ServiceContext<'composer'>): SettingsPort {
  return {
    async servers(choice) {
      const params = choiceParams(choice);
      return resolvedServers(await again(() => ctx.call('settings', 'settings/resolve-all', params, { timeoutMs: LOCAL_TIMEOUT_MS })));
    },
    async names() {
      return Object.keys((await again(() => ctx.call('settings', 'settings/get', {}, { timeoutMs: LOCAL_TIMEOUT_MS }))).servers);
    },
  };
}

export function workerCatalogues(ctx: ServiceContext<'composer'>): CataloguePort {
  let batch: Array<{ server: string; fingerprint: string; resolve(r: SavedCatalogue | undefined): void; reject(e: unknown): void }> = [];
  const flush = (): void => {
    const mine = batch;
    batch = [];
    const servers = mine.map(({ server, fingerprint }) => ({ server, fingerprint }));
    again(() => ctx.call('catalogue', 'catalogue/current', { servers }, { timeoutMs: LOCAL_TIMEOUT_MS })).then(
      (rows) => mine.forEach((m, i) => m.resolve(rows[i] ?? undefined)),
      (err) => {
        for (const m of mine) m.reject(err);
      },
    );
  };
  return {
    current(server, fingerprint) {
      return new Promise((resolve, reject) => {
        if (!batch.length) queueMicrotask(flush);
        batch.push({ server, fingerprint, resolve, reject });
      });
    },
    async put(row) {
      const r = await ctx.call('catalogue', 'catalogue/put', { row }, { timeoutMs: LOCAL_TIMEOUT_MS });
      return r.changed;
    },
  };
}

/** The normaliser in the catalogue service; a batch per call, asked again once if its worker was lost (normalising is pure). */
export function workerNormaliseMany(ctx: ServiceContext<'composer'>): (schemas: unknown[], profile: string) => Promise<NormaliseResult[]> {
  return (schemas, profile) => again(() => ctx.call('catalogue', 'catalogue/normalise', { schemas, profile }, { timeoutMs: 120_000 }));
}

export interface WorkerPortsOptions extends TransportPortOptions {
  profiles: readonly string[];
  /** Every connection id is on it before its dial is sent, and leaves it once closed. */
  ledger: Ledger;
  /** Runs just before the owner is asked to drain a connection (the service publishes its snapshots then). */
  beforeDrain?: () => void;
}

/** Every port over the worker context; `transportEvents` is fed by the service's forwarded events. */
export function workerPorts(
  ctx: ServiceContext<'composer'>,
  opts: WorkerPortsOptions,
  subscribe: (listener: (event: TransportEvent) => void) => () => void,
): ComposerPorts {
  // The context is a ServiceCaller as it is: its calls are typed by the same maps.
  const transport = transportPort(ctx, subscribe, opts);
  const { open, close } = transport;
  transport.open = async (id, server, o) => {
    await opts.ledger.add(id);
    try {
      return await open(id, server, o);
    } catch (err) {
      // A failed open leaves nothing in the transport.
      void opts.ledger.remove(id).catch(() => {});
      throw err;
    }
  };
  transport.close = async (id) => {
    await close(id);
    await opts.ledger.remove(id).catch(() => {});
  };
  transport.drain = async (id) => {
    opts.beforeDrain?.();
    await ctx.call('host', 'host/drain', { ids: [id] }, { timeoutMs: DRAIN_TIMEOUT_MS });
  };
  const many = workerNormaliseMany(ctx);
  return {
    settings: workerSettings(ctx),
    catalogues: workerCatalogues(ctx),
    transport,
    normalise: async (schema, profile) => (await many([schema], profile))[0],
    normaliseMany: many,
    clock: Date,
    profiles: opts.profiles,
  };
}
