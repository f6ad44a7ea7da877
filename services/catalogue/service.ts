/**
 * The catalogue service: one worker over the saved catalogues (LMDB
 * `mcp_catalogues`, store.ts) and the schema normaliser (schema/), mapping
 * the messages of protocol/services/catalogue.ts onto them. Started with
 * `options: { storePath, pool? }`: `storePath` is `$ALBEDO_HOME/store`, the
 * LMDB environment the era cache shares; `pool` tunes where large
 * `catalogue/normalise` batches run (normalise-pool.ts). Nothing it holds is
 * lost with the worker: rows are in LMDB, normalising is pure.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { defineService } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_LOOKUPS, MAX_NORMALISE_BATCH, savedCatalogueSchema, type CatalogueMethods } from '../../protocol/services/catalogue.ts';
import { NormalisePool, type PoolOptions } from './normalise-pool.ts';
import { linuxThreadId } from './normalise-task.ts';
import { isProfile, PROFILES } from './schema/normalise.ts';
import { CatalogueStore, closeCatalogueStores, type SavedCatalogue } from './store.ts';

type P<M extends keyof CatalogueMethods> = CatalogueMethods[M]['params'];

export interface CatalogueServiceOptions {
  /** The LMDB environment, `$ALBEDO_HOME/store`. */
  storePath: string;
  pool?: PoolOptions;
}

let store: CatalogueStore | undefined;
let pool: NormalisePool | undefined;
const TID = linuxThreadId();
/** The event-loop delay monitor, made on `catalogue/stats { loopDelay: 'start' }` only (its timer costs a wake-up per ms). */
let loop: IntervalHistogram | undefined;
let measuring = false;

const invalid = (message: string, data?: unknown): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data });

function the(): { store: CatalogueStore; pool: NormalisePool } {
  if (!store || !pool) throw new AlbedoError('ALBEDO_CLOSED', 'the catalogue service is not started', { outcome: 'not_run' });
  return { store, pool };
}

function serverOf(p: { server?: unknown } | undefined): string {
  if (typeof p?.server !== 'string' || p.server === '') throw invalid('server must be a non-empty string');
  return p.server;
}

function wanted(p: P<'catalogue/current'> | undefined): { server: string; fingerprint: string }[] {
  const list: unknown = p?.servers;
  if (!Array.isArray(list)) throw invalid('servers must be an array of { server, fingerprint }');
  if (list.length > MAX_LOOKUPS) throw invalid(`at most ${MAX_LOOKUPS} servers per lookup`, { path: ['servers'] });
  list.forEach((x: { server?: unknown; fingerprint?: unknown } | null, i) => {
    if (typeof x?.server !== 'string' || typeof x.fingerprint !== 'string') {
      throw invalid(`servers[${i}] must be { server: string, fingerprint: string }`, { path: ['servers', i] });
    }
  });
  return list as { server: string; fingerprint: string }[];
}

function rowOf(p: P<'catalogue/put'> | undefined): SavedCatalogue {
  const r = savedCatalogueSchema.safeParse(p?.row);
  if (r.success) return p!.row;
  const issue = r.error.issues[0]!;
  throw invalid(`row.${issue.path.join('.')}: ${issue.message}`, {
    path: ['row', ...issue.path.map((x) => (typeof x === 'symbol' ? String(x) : x))],
  });
}

export default defineService('catalogue', {
  start(ctx) {
    const o = ctx.options as CatalogueServiceOptions | undefined;
    if (!o || typeof o.storePath !== 'string') throw new Error('the catalogue service needs options.storePath');
    store = new CatalogueStore(o.storePath);
    pool = new NormalisePool(o.pool);
  },
  async stop() {
    const p = pool;
    loop?.disable();
    store = undefined;
    pool = undefined;
    await p?.destroy();
    await closeCatalogueStores();
  },
  handlers: {
    'catalogue/current'(p) {
      const { store } = the();
      return wanted(p).map(({ server, fingerprint }) => store.current(server, fingerprint) ?? null);
    },
    async 'catalogue/put'(p) {
      const { store } = the();
      return { changed: await store.put(rowOf(p)) };
    },
    async 'catalogue/remove'(p) {
      await the().store.remove(serverOf(p));
      return {};
    },
    async 'catalogue/normalise'(p, call) {
      const { pool } = the();
      const { schemas, profile } = p ?? {};
      if (typeof profile !== 'string' || !isProfile(profile)) {
        throw invalid(`unknown profile; one of ${PROFILES.join(', ')}`, {
          profile: typeof profile === 'string' ? profile.slice(0, 100) : null,
        });
      }
      if (!Array.isArray(schemas)) throw invalid('schemas must be an array');
      if (schemas.length > MAX_NORMALISE_BATCH) throw invalid(`at most ${MAX_NORMALISE_BATCH} schemas per call`, { count: schemas.length });
      return pool.normalise(schemas, profile, call.signal);
    },
    'catalogue/profiles'() {
      return [...PROFILES];
    },
    async 'catalogue/stats'(p) {
      const { pool } = the();
      const what = p?.loopDelay;
      if (what !== undefined && what !== 'start' && what !== 'stop') throw invalid("loopDelay must be 'start' or 'stop'");
      if (what === 'start') {
        loop?.disable();
        loop = monitorEventLoopDelay({ resolution: 1 });
        loop.enable();
        // Its first tick only sets the baseline: answer once it has ticked, so what follows is measured.
        await new Promise((r) => setTimeout(r, 5));
      }
      if (what === 'stop' && measuring) {
        // A block that just ended is recorded when the monitor's timer fires late: let it fire once more.
        await new Promise((r) => setTimeout(r, 5));
        loop?.disable();
      }
      measuring = what === 'start' || (measuring && what !== 'stop');
      const delay = loop ? { maxMs: loop.max / 1e6, meanMs: Number.isNaN(loop.mean) ? 0 : loop.mean / 1e6, measuring } : null;
      return { tid: TID, ...pool.stats(), loopDelay: delay };
    },
  },
});
