// Saved catalogues in real LMDB: a row per server under its fingerprint,
// read from another process, beside the era cache in the same environment;
// a schema's `__proto__` property comes back as the key it was saved under.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Kernel } from '../../kernel/kernel.ts';
import { fixture, tempHome, NODE, ROOT } from '../helpers.ts';
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

t.test('a row of another shape or encoding is ignored, not trusted', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(closeCatalogueStores);
  const { open } = await import('lmdb');
  const root = open({ path: store, compression: false, maxDbs: 16 });
  const text = root.openDB<string, string>({ name: 'mcp_catalogues', compression: true, encoding: 'string' });
  await text.put('old', JSON.stringify({ v: 0, server: 'old', fingerprint: 'x' }));
  await text.put('broken', JSON.stringify({ v: 2, server: 'broken', fingerprint: 'x', catalogue: { tools: 'no' } }));
  await text.put('torn', '{"v":2,"server":"torn"');
  // What the version before JSON text wrote: lmdb's default encoding (msgpackr).
  await root.openDB({ name: 'mcp_catalogues', compression: true }).put('msgpackr', { ...row({ server: 'msgpackr' }), v: 1 });
  const s = new CatalogueStore(store);
  for (const name of ['old', 'broken', 'torn', 'msgpackr']) t.equal(s.get(name), undefined, name);
  t.equal(await s.put(row({ server: 'msgpackr' })), true, 'a row the msgpackr version saved is replaced by the next discovery');
  t.equal(s.get('msgpackr')?.server, 'msgpackr');
  await root.close();
});

t.test('a JSON row whose lists hold what no discovery saved (damaged on disk) is ignored, not advertised', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(closeCatalogueStores);
  const { open } = await import('lmdb');
  const root = open({ path: store, compression: false, maxDbs: 16 });
  const text = root.openDB<string, string>({ name: 'mcp_catalogues', compression: true, encoding: 'string' });
  // Advertised, the first three threw a TypeError from the open of every session over the server (its definitions and
  // names are built from the items), and the row was never replaced: no session got as far as its dial.
  const damaged: Record<string, unknown> = {
    'null tool': { tools: [null] },
    'numeric name': { tools: [{ name: 5, inputSchema: { type: 'object' } }] },
    'string tool': { tools: ['search'] },
    'resource without uri': { resources: [{ name: 'r' }] },
    'prompt arguments not a list': { prompts: [{ name: 'p', arguments: 'x' }] },
  };
  for (const [what, lists] of Object.entries(damaged)) {
    const saved = row({ server: what, catalogue: { ...row().catalogue, ...(lists as object) } });
    await text.put(what, JSON.stringify({ ...saved, v: 2 }));
  }
  await text.put('whole', JSON.stringify({ ...row({ server: 'whole' }), v: 2 }));
  const s = new CatalogueStore(store);
  for (const what of Object.keys(damaged)) t.equal(s.current(what, 'fp1'), undefined, what);
  t.equal(s.current('whole', 'fp1')?.server, 'whole', 'the control: a whole row of the same version is found');
  t.equal(await s.put(row({ server: 'null tool' })), true, 'the next discovery replaces a damaged row');
  t.equal(s.current('null tool', 'fp1')?.catalogue.tools[0]?.name, 'search');
  await root.close();
});

/**
 * A catalogue whose schemas name a property `__proto__`, as JSON.parse makes
 * it from the wire (an own key): the hand-made hard case of odd property
 * names and the tool test/fixtures/catalogue-hostile-server.ts lists.
 */
function protoRow(): SavedCatalogue {
  const hard = JSON.parse(readFileSync(fixture('schemas/hard.json'), 'utf8')) as { cases: Record<string, unknown> };
  const hostile = JSON.parse(
    '{"name":"__proto__","inputSchema":{"type":"object","properties":{"__proto__":{"type":"string"},"constructor":{"type":"number"}},' +
      '"required":["__proto__"]}}',
  );
  const tools = [{ name: 'odd_names', inputSchema: hard.cases.property_names }, hostile];
  return row({ catalogue: { tools, resources: [], resourceTemplates: [], prompts: [] } as SavedCatalogue['catalogue'] });
}

const propsOf = (c: SavedCatalogue | undefined | null, i: number): Record<string, unknown> =>
  (c?.catalogue.tools[i]?.inputSchema as { properties: Record<string, unknown> }).properties;

t.test('a schema property named __proto__ comes back as __proto__, in this process and another', async (t) => {
  const store = path.join(tempHome(t), 'store');
  t.teardown(closeCatalogueStores);
  const saved = protoRow();
  t.ok(Object.hasOwn(propsOf(saved, 0), '__proto__') && Object.hasOwn(propsOf(saved, 1), '__proto__'), 'the fixture has the key');
  const s = new CatalogueStore(store);
  t.equal(await s.put(saved), true);
  const got = s.get('docs');
  for (const i of [0, 1]) {
    t.same(Object.keys(propsOf(got, i)), Object.keys(propsOf(saved, i)), `tool ${i}: the same keys, in order`);
    t.ok(Object.hasOwn(propsOf(got, i), '__proto__'), `tool ${i}: __proto__ is an own key`);
    t.equal(Object.getPrototypeOf(propsOf(got, i)), Object.prototype, `tool ${i}: the object's prototype is untouched`);
  }
  t.equal(JSON.stringify(got?.catalogue), JSON.stringify(saved.catalogue), 'the catalogue as it was saved');
  t.equal(await s.put(protoRow()), false, 'so the same discovery again is the same, and writes nothing');
  const script = `
    import { CatalogueStore } from ${JSON.stringify(path.join(ROOT, 'services/catalogue/store.ts'))};
    const got = new CatalogueStore(${JSON.stringify(store)}).get('docs');
    console.log(JSON.stringify(got.catalogue.tools.map((x) => Object.keys(x.inputSchema.properties))));
  `;
  const r = spawnSync(NODE, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.same(
    JSON.parse(r.stdout),
    [0, 1].map((i) => Object.keys(propsOf(saved, i))),
    'another process reads the same keys',
  );
});

t.test('through the catalogue service: catalogue/put then catalogue/current keep a __proto__ property', async (t) => {
  const k = new Kernel();
  const module = path.join(ROOT, 'services/catalogue/service.ts');
  k.start({ name: 'catalogue', module, options: { storePath: path.join(tempHome(t), 'store') } });
  t.teardown(() => k.stop(5_000));
  const saved = protoRow();
  t.same(await k.call('catalogue', 'catalogue/put', { row: saved }), { changed: true });
  const [got] = await k.call('catalogue', 'catalogue/current', { servers: [{ server: 'docs', fingerprint: 'fp1' }] });
  t.same(Object.keys(propsOf(got, 1)), ['__proto__', 'constructor']);
  t.equal(JSON.stringify(got?.catalogue), JSON.stringify(saved.catalogue));
  t.same(await k.call('catalogue', 'catalogue/put', { row: protoRow() }), { changed: false }, 'the same discovery changes nothing');
});
