/**
 * An example replacement service: the catalogue kept in memory instead of
 * LMDB. It answers every message of protocol/services/catalogue.ts, so the
 * composer cannot tell it from the built-in one (services/catalogue/service.ts)
 * except that a saved catalogue lives as long as this worker: a restart of
 * the worker, or a new Albedo, starts with none and the composer dials every
 * server during preparation again. Schemas are normalised on this worker's
 * own thread, one at a time (the built-in service sends large batches to a
 * pool of threads).
 *
 * Use it as any replacement (docs/services.md):
 *
 *   createAlbedo({ services: { catalogue: { module: new URL('./examples/services/memory-catalogue.ts', import.meta.url) } } })
 *
 * It is given the built-in service's options (`storePath`) and ignores them.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { defineService } from '../../kernel/service.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { SavedCatalogue } from '../../protocol/catalogue.ts';
import { MAX_LOOKUPS, MAX_NORMALISE_BATCH, savedCatalogueSchema } from '../../protocol/services/catalogue.ts';
import { isProfile, normalise, PROFILES } from '../../services/catalogue/schema/normalise.ts';

/** The saved catalogues, by server name: one row each, as the LMDB table keeps them. */
const rows = new Map<string, SavedCatalogue>();
const counts = { inThread: 0 };
let loop: IntervalHistogram | undefined;
let measuring = false;

const invalid = (message: string, data?: unknown): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data });

/** A discovery is the same as the saved one when everything but the time it was saved is. */
const sameDiscovery = (a: SavedCatalogue, b: SavedCatalogue): boolean => isDeepStrictEqual({ ...a, savedAt: 0 }, { ...b, savedAt: 0 });

export default defineService('catalogue', {
  stop() {
    loop?.disable();
    rows.clear();
  },
  handlers: {
    'catalogue/current'(p) {
      if (!Array.isArray(p?.servers)) throw invalid('servers must be an array of { server, fingerprint }');
      if (p.servers.length > MAX_LOOKUPS) throw invalid(`at most ${MAX_LOOKUPS} servers per lookup`, { path: ['servers'] });
      return p.servers.map((want, i) => {
        if (typeof want?.server !== 'string' || typeof want.fingerprint !== 'string') {
          throw invalid(`servers[${i}] must be { server: string, fingerprint: string }`, { path: ['servers', i] });
        }
        const row = rows.get(want.server);
        return row && row.fingerprint === want.fingerprint ? structuredClone(row) : null;
      });
    },
    'catalogue/put'(p) {
      const checked = savedCatalogueSchema.safeParse(p?.row);
      if (!checked.success) {
        const issue = checked.error.issues[0]!;
        // An index stays a number, as the built-in service names it (only a symbol, which JSON cannot carry, becomes text).
        const at = issue.path.map((x) => (typeof x === 'symbol' ? String(x) : x));
        throw invalid(`row.${issue.path.join('.')}: ${issue.message}`, { path: ['row', ...at] });
      }
      const row = p.row;
      const saved = rows.get(row.server);
      if (saved && saved.fingerprint === row.fingerprint && sameDiscovery(saved, row)) return { changed: false };
      rows.set(row.server, structuredClone(row));
      return { changed: true };
    },
    'catalogue/remove'(p) {
      if (typeof p?.server !== 'string' || p.server === '') throw invalid('server must be a non-empty string');
      rows.delete(p.server);
      return {};
    },
    async 'catalogue/normalise'(p, call) {
      const { schemas, profile } = p ?? {};
      if (!isProfile(profile)) {
        throw invalid(`unknown profile; one of ${PROFILES.join(', ')}`, {
          profile: typeof profile === 'string' ? profile.slice(0, 100) : null,
        });
      }
      if (!Array.isArray(schemas)) throw invalid('schemas must be an array');
      if (schemas.length > MAX_NORMALISE_BATCH) throw invalid(`at most ${MAX_NORMALISE_BATCH} schemas per call`, { count: schemas.length });
      counts.inThread++;
      const out = [];
      for (const schema of schemas) {
        // The caller gave up (its deadline, a cancel): the rest is not worth normalising.
        call.signal.throwIfAborted();
        out.push(await normalise(schema, profile));
      }
      return out;
    },
    'catalogue/profiles'() {
      return [...PROFILES];
    },
    async 'catalogue/stats'(p) {
      const what = p?.loopDelay;
      if (what !== undefined && what !== 'start' && what !== 'stop') throw invalid("loopDelay must be 'start' or 'stop'");
      if (what === 'start') {
        loop?.disable();
        loop = monitorEventLoopDelay({ resolution: 1 });
        loop.enable();
        // Its first tick only sets the baseline.
        await new Promise((r) => setTimeout(r, 5));
      }
      if (what === 'stop') loop?.disable();
      measuring = what === 'start' || (measuring && what !== 'stop');
      const loopDelay = loop ? { maxMs: loop.max / 1e6, meanMs: Number.isNaN(loop.mean) ? 0 : loop.mean / 1e6, measuring } : null;
      // No pool: every batch runs here, whatever its size.
      return {
        tid: null,
        threshold: MAX_NORMALISE_BATCH,
        inThread: counts.inThread,
        pooled: 0,
        running: 0,
        cancelled: 0,
        pool: null,
        loopDelay,
      };
    },
  },
});
