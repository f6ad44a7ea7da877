// A cached legacy verdict is a saving, never a pin (issue 25 item 7): a server
// upgraded in place to a dual-era release is found modern again, by the
// declared serverInfo.version changing or by the verdict's age; over stdio
// and over HTTP, with the official SDK packages on both sides of the change.
import t from 'tap';
import http from 'node:http';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { albedoFor, newTag, server, fixture, tempHome, tempDir, httpFixture, type HttpFixture } from '../helpers.ts';
import { EraCache, LEGACY_VERDICT_MAX_AGE_MS } from '../../services/negotiation/era-cache.ts';

t.test('stdio: an upgrade that changes serverInfo.version marks the verdict; the next dial probes and goes modern', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const modeFile = path.join(tempDir(t, 'era-flip-'), 'mode');
  writeFileSync(modeFile, 'legacy');
  const a = await albedoFor(t, tag, { home });
  const cfg = server(tag, fixture('era-flip-server.ts'), [], { env: { ERA_FLIP_FILE: modeFile } });
  const cache = new EraCache(path.join(home, 'store'));

  const first = await a.connect(cfg);
  t.equal(first.era, 'legacy');
  t.equal(first.info.detection, 'probe');
  const fp = first.server.fingerprint;
  t.match(cache.get(fp), { era: 'legacy', serverVersion: '1.0.0' });
  t.notOk(cache.get(fp)?.reprobe);
  await first.close();

  const second = await a.connect(cfg);
  t.equal(second.info.detection, 'cached', 'an unchanged legacy server is still dialled with initialize first');
  await second.close();

  writeFileSync(modeFile, 'dual');
  const third = await a.connect(cfg);
  t.equal(third.era, 'legacy', 'the cached verdict still sends initialize first, which the dual server answers');
  t.equal(third.info.detection, 'cached');
  t.equal(third.info.serverInfo?.version, '2.4.0');
  t.equal(cache.get(fp)?.reprobe, true, 'the changed version marks the verdict');
  await third.close();

  const fourth = await a.connect(cfg);
  t.equal(fourth.era, 'modern', 'the marked verdict is not trusted: server/discover first, and the server is modern');
  t.equal(fourth.protocolVersion, '2026-07-28');
  t.equal(fourth.info.detection, 'probe');
  t.match(cache.get(fp), { era: 'modern', serverVersion: '2.4.0' });
  t.notOk(cache.get(fp)?.reprobe);
  await fourth.close();
});

t.test('stdio: a legacy verdict older than a day is probed again, with no version change', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home });
  const cfg = server(tag, fixture('sdk-server.ts'));
  const cache = new EraCache(path.join(home, 'store'));
  const first = await a.connect(cfg);
  t.equal(first.era, 'modern');
  const fp = first.server.fingerprint;
  await first.close();

  // As an earlier judgement would have left it: legacy, the same version, judged just under a day ago.
  const judged = { era: 'legacy' as const, protocolVersion: '2025-11-25', serverVersion: '2.4.0' };
  await cache.put(fp, { ...judged, at: Date.now() - LEGACY_VERDICT_MAX_AGE_MS + 60_000 });
  const fresh = await a.connect(cfg);
  t.equal(fresh.era, 'legacy', 'a fresh legacy verdict is trusted');
  t.equal(fresh.info.detection, 'cached');
  await fresh.close();

  await cache.forget(fp);
  await cache.put(fp, { ...judged, at: Date.now() - LEGACY_VERDICT_MAX_AGE_MS - 60_000 });
  const stale = await a.connect(cfg);
  t.equal(stale.era, 'modern', 'a stale legacy verdict is probed again');
  t.equal(stale.info.detection, 'probe');
  t.equal(cache.get(fp)?.era, 'modern');
  await stale.close();

  // A verdict dated in the future (a clock set back) is not trusted either.
  await cache.forget(fp);
  await cache.put(fp, { ...judged, at: Date.now() + LEGACY_VERDICT_MAX_AGE_MS });
  const ahead = await a.connect(cfg);
  t.equal(ahead.era, 'modern');
  await ahead.close();
});

t.test('stdio: a legacy-only server keeps its cached verdict through probes (no flapping)', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home });
  const cfg = server(tag, fixture('sdk1-server.ts'));
  const cache = new EraCache(path.join(home, 'store'));
  const c = await a.connect(cfg);
  const fp = c.server.fingerprint;
  await c.close();
  await cache.put(fp, { era: 'legacy', protocolVersion: '2025-11-25', serverVersion: '1.0.0', at: 1 });
  const again = await a.connect(cfg);
  t.equal(again.era, 'legacy');
  t.equal(again.info.detection, 'probe', 'a stale verdict is probed');
  const row = cache.get(fp);
  t.ok(row && Date.now() - row.at < 60_000, 'and the probe renews its age');
  await again.close();
  const third = await a.connect(cfg);
  t.equal(third.info.detection, 'cached', 'the renewed verdict is trusted again');
  await third.close();
});

/** A loopback front whose backend can be swapped: the server's URL (and so its fingerprint) stays, the release behind it changes. */
async function front(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; to(backend: string): void }> {
  let backend = '';
  const srv = http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', backend);
    const out = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  srv.unref();
  const port = (srv.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/mcp`, to: (b) => void (backend = b) };
}

t.test('HTTP: a sessionful legacy release replaced by a dual-era one behind the same URL goes modern', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const a = await albedoFor(t, tag, { home });
  const legacy: HttpFixture = await httpFixture(t, tag, fixture('sdk1-http-server.ts'));
  const dual: HttpFixture = await httpFixture(t, tag, fixture('sdk-http-server.ts'), ['--mode', 'dual']);
  const f = await front(t);
  const cache = new EraCache(path.join(home, 'store'));
  f.to(legacy.url);

  const first = await a.connect({ url: f.url });
  t.equal(first.era, 'legacy');
  const fp = first.server.fingerprint;
  t.match(cache.get(fp), { era: 'legacy', serverVersion: '1.0.0' });
  await first.close();

  f.to(dual.url);
  const second = await a.connect({ url: f.url });
  t.equal(second.info.detection, 'cached');
  t.equal(second.info.serverInfo?.version, '2.4.0');
  t.equal(cache.get(fp)?.reprobe, true);
  t.same((await second.callTool('add', { a: 1, b: 2 })).structuredContent, { sum: 3 }, 'the legacy dial still works meanwhile');
  await second.close();

  const third = await a.connect({ url: f.url });
  t.equal(third.era, 'modern');
  t.equal(third.info.detection, 'probe');
  t.same((await third.callTool('add', { a: 2, b: 40 })).structuredContent, { sum: 42 });
  t.equal(cache.get(fp)?.era, 'modern');
  await third.close();
});
