// Saved catalogues in real LMDB: a row per server under its fingerprint,
// read from another process, beside the era cache in the same environment.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { tempHome, NODE, ROOT } from '../helpers.ts';
import { CatalogueStore, closeCatalogueStores, type SavedCatalogue } from '../../services/catalogue/store.ts';
import { EraCache, closeEraCaches } from '../../services/negotiation/era-cache.ts';

const row = (over: Partial<SavedCatalogue> = {}): SavedCatalogue => ({
  server: 'docs',
  fingerprint: 'fp1',
  era: 'legacy',
  protocolVersion: '2025-06-18',
  serverInfo: { name: 'docs', version: '1.0.0' },
  capabilities: { tools: {} },
  instructions: 'Use search first.',
  catalogue: { tools: [{ name: 'search', inputSchema: { type: 'object' } }], resources: [], resourceTemplates: [], prompts: [] },
  savedAt: 1,
  ...over,
});

t.test('a row is found for its fingerprint only; an equal discovery writes nothing', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(closeCatalogueStores);
  const s = new CatalogueStore(store);
  t.equal(s.get('docs'), undefined);
  t.equal(await s.put(row()), true, 'the first discovery is saved');
  t.same(
    s.current('docs', 'fp1')?.catalogue.tools.map((x) => x.name),
    ['search'],
  );
  t.equal(s.current('docs', 'fp2'), undefined, 'another fingerprint (config or secret changed) finds nothing');
  t.equal(await s.put(row({ savedAt: 2 })), false, 'the same discovery again changes nothing');
  t.equal(s.get('docs')?.savedAt, 1);
  const changed = row({
    catalogue: {
      ...row().catalogue,
      tools: [
        { name: 'search', inputSchema: { type: 'object' } },
        { name: 'fetch', inputSchema: { type: 'object' } },
      ],
    },
  });
  t.equal(await s.put(changed), true, 'a different discovery is saved');
  t.equal(await s.put(row({ fingerprint: 'fp2' })), true, 'a new fingerprint is saved even with the same lists');
  t.same(s.servers(), ['docs']);
  await s.remove('docs');
  t.equal(s.get('docs'), undefined);
});

t.test('rows are shared with another process, and live beside the era cache', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(async () => {
    await closeCatalogueStores();
    await closeEraCaches();
  });
  const era = new EraCache(store);
  await era.put('fp1', { era: 'legacy', protocolVersion: '2025-06-18', at: 1 });
  const s = new CatalogueStore(store);
  await s.put(row({ server: 'a' }));
  const script = `
    import { CatalogueStore } from ${JSON.stringify(path.join(ROOT, 'services/catalogue/store.ts'))};
    const s = new CatalogueStore(${JSON.stringify(store)});
    const got = s.current('a', 'fp1');
    await s.put({ ...got, server: 'b', fingerprint: 'fp9' });
    console.log(JSON.stringify(got.catalogue.tools.map((x) => x.name)));
  `;
  const r = spawnSync(NODE, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.same(JSON.parse(r.stdout), ['search'], 'the other process read the row');
  t.equal(s.current('b', 'fp9')?.server, 'b', 'and its write is seen here');
  t.equal(era.get('fp1')?.era, 'legacy', 'the era cache is untouched');
});

t.test('a row of another shape is ignored, not trusted', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(closeCatalogueStores);
  const { open } = await import('lmdb');
  const root = open({ path: store, compression: false, maxDbs: 16 });
  await root.openDB({ name: 'mcp_catalogues', compression: true }).put('old', { v: 0, server: 'old', fingerprint: 'x' });
  await root
    .openDB({ name: 'mcp_catalogues', compression: true })
    .put('broken', { v: 1, server: 'broken', fingerprint: 'x', catalogue: { tools: 'no' } });
  const s = new CatalogueStore(store);
  t.equal(s.get('old'), undefined);
  t.equal(s.get('broken'), undefined);
  await root.close();
});
