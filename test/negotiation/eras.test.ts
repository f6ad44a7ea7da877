import t from 'tap';
import { albedoFor, newTag, server, fixture, EVERYTHING, NODE, rejection, tempHome } from '../helpers.ts';
import { EraCache } from '../../services/negotiation/era-cache.ts';
import path from 'node:path';

t.test('official SDK 2.x dual-era server is modern (2026-07-28)', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('sdk-server.ts')));
  t.equal(c.era, 'modern');
  t.equal(c.protocolVersion, '2026-07-28');
  t.same(c.info.serverInfo, { name: 'albedo-fixture-sdk2', version: '2.4.0' });
  t.equal(c.info.instructions, 'Fixture server for Albedo tests.');
  t.same(
    c.catalogue.tools.map((x) => x.name),
    ['echo', 'add', 'sleep', 'fail', 'add_tool'],
  );
  t.same(
    c.catalogue.resources.map((x) => x.uri),
    ['fixture://readme'],
  );
  t.same(
    c.catalogue.resourceTemplates.map((x) => x.uriTemplate),
    ['fixture://items/{id}'],
  );
  t.same(
    c.catalogue.prompts.map((x) => x.name),
    ['greet'],
  );
  const r = await c.callTool('add', { a: 2, b: 40 });
  t.same(r.structuredContent, { sum: 42 });
  t.same((await c.readResource('fixture://items/7')).contents[0], { uri: 'fixture://items/7', text: 'item 7' });
  t.match((await c.getPrompt('greet', { name: 'Ada' })).messages[0], { role: 'user', content: { text: 'Hello, Ada!' } });
  const failed = await c.callTool('fail');
  t.equal(failed.isError, true, 'a tool-reported error is a result, not an exception');
});

t.test('official SDK 2.x modern-only server (legacy: reject) is modern', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('sdk-server.ts'), ['--legacy', 'reject']));
  t.equal(c.era, 'modern');
  t.equal((await c.callTool('echo', { text: 'modern only' })).content[0].text, 'modern only');
});

t.test('official SDK 1.x server is legacy (2025-11-25)', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('sdk1-server.ts')));
  t.equal(c.era, 'legacy');
  t.equal(c.protocolVersion, '2025-11-25');
  t.same(c.info.serverInfo, { name: 'albedo-fixture-sdk1', version: '1.0.0' });
  t.equal((await c.callTool('echo', { text: 'old' })).content[0].text, 'old');
});

t.test('server-everything over stdio: legacy, full catalogue, calls', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, EVERYTHING, ['stdio']));
  t.equal(c.era, 'legacy');
  t.ok(c.catalogue.tools.some((x) => x.name === 'get-sum'));
  t.same(await c.listTools(), c.catalogue.tools, 'a fresh list matches the discovered catalogue');
  t.ok(c.catalogue.resources.length > 0 && c.catalogue.prompts.length > 0 && c.catalogue.resourceTemplates.length > 0);
  const sum = await c.callTool('get-sum', { a: 19, b: 23 });
  t.match(JSON.stringify(sum.content), /42/);
});

t.test('a legacy server that ignores server/discover gets initialize after one second', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const t0 = Date.now();
  const c = await a.connect(server(tag, fixture('bad-server.ts'), ['silent-legacy']));
  const took = Date.now() - t0;
  t.equal(c.era, 'legacy');
  t.equal(c.protocolVersion, '2025-06-18');
  t.ok(took >= 950, `initialize waited for the one-second silence (took ${took} ms)`);
});

t.test('a server that answers only after 3 s is still detected (legacy)', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('bad-server.ts'), ['slow']));
  t.equal(c.era, 'legacy');
  t.equal((await c.callTool('echo', { text: 'late' })).content[0].text, 'late');
});

t.test('a modern server naming only legacy versions gets initialize', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const c = await a.connect(server(tag, fixture('bad-server.ts'), ['modern-names-legacy']));
  t.equal(c.era, 'legacy');
  t.equal(c.protocolVersion, '2025-06-18');
});

t.test('no version in common is refused, listing both sides', async (t) => {
  const tag = newTag();
  const a = await albedoFor(t, tag);
  const e = await rejection(a.connect(server(tag, fixture('bad-server.ts'), ['refuse-era'])));
  t.equal(e.code, 'ALBEDO_ERA_REFUSED');
  t.match(e.message, /2099-01-01/);
  t.match(e.message, /2026-07-28/);
  t.match(e.message, /2024-11-05/);
  const old = await rejection(a.connect(server(tag, fixture('bad-server.ts'), ['old-version'])));
  t.equal(old.code, 'ALBEDO_ERA_REFUSED');
  t.match(old.message, /2023-01-01/);
});

t.test('the era verdict is cached in LMDB and re-probed when wrong', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home });
  const cfg = server(tag, fixture('bad-server.ts'), ['silent-legacy']);
  const first = await a.connect(cfg);
  t.equal(first.info.detection, 'probe');
  await first.close();
  const second = await a.connect(cfg);
  t.equal(second.info.detection, 'cached', 'the second connect trusts the cached legacy verdict');
  t.equal(second.era, 'legacy');
  // Poison the cache: the server is legacy but the cache says modern.
  const cache = new EraCache(path.join(home, 'store'));
  const fp = second.server.fingerprint;
  t.equal(cache.get(fp)?.era, 'legacy');
  await second.close();
  await cache.put(fp, { era: 'modern', protocolVersion: '2026-07-28', at: Date.now() });
  const third = await a.connect(cfg);
  t.equal(third.era, 'legacy', 'a wrong cached verdict is corrected by a fresh probe');
  t.equal(third.info.detection, 'probe', 'found by the one-second fallback, not the cache');
  t.equal(cache.get(fp)?.era, 'legacy', 'and the cache is updated');
  // A legacy verdict for a modern server fails initialize → fresh probe.
  const modernCfg = server(tag, fixture('sdk-server.ts'), ['--legacy', 'reject']);
  const m1 = await a.connect(modernCfg);
  await cache.put(m1.server.fingerprint, { era: 'legacy', protocolVersion: '2025-11-25', at: Date.now() });
  await m1.close();
  const m2 = await a.connect(modernCfg);
  t.equal(m2.era, 'modern');
  t.equal(cache.get(m2.server.fingerprint)?.era, 'modern');
  void NODE;
});
