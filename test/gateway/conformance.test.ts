// The conformance suite's server scenarios through a pass-through gateway: the
// fixture backend (fixtures/conformance-server.ts) configured as a stdio server
// of a real daemon, served at /mcp/gateways/conf (HTTP, both eras) with a gateway
// token (through auth-proxy.ts: the suite sends no Authorization header), and the
// same backend over HTTP directly. The gateway must pass every scenario the
// backend passes; the checks that are the gateway's own (DNS rebinding, header validation, session lifecycle,
// stateless) run against the gateway itself.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE, fixture, httpFixture, newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { regressions, runServerSuite, table } from '../conformance/server.ts';
import { startAuthProxy } from '../conformance/auth-proxy.ts';

t.setTimeout(20 * 60_000);

/** The checks that are the gateway's own, not the backend's: each must pass on the gateway. */
const OWN = [
  'dns-rebinding-protection',
  'http-header-validation',
  'http-custom-header-server-validation',
  'server-session-lifecycle',
  'server-stateless',
];

t.test('the conformance server suite through a pass-through gateway: what the backend passes, the gateway passes', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const servers = { conf: { command: NODE, args: [fixture('conformance-server.ts'), '--stdio'] } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers }, gateways: { conf: { server: 'conf' } } }), {
    mode: 0o600,
  });
  const d = await startDaemon(t, home, { tag });
  const minted = await d.call('POST', '/v1/gateways/conf/tokens');
  t.equal(minted.status, 201, 'a gateway token');
  const proxy = await startAuthProxy({ target: `http://127.0.0.1:${d.info.port}/mcp/gateways/conf`, token: minted.body.token });
  t.teardown(() => proxy.close());
  const direct = await httpFixture(t, tag, fixture('conformance-server.ts'), ['--http']);

  const [viaGateway, backend] = [await runServerSuite({ url: proxy.url }), await runServerSuite({ url: direct.url })];
  t.comment(`backend directly:\n${table(backend)}`);
  t.comment(`through the gateway:\n${table(viaGateway)}`);
  t.same(backend.failures, [], 'the backend passes every scenario it runs');
  const lost = regressions(backend, viaGateway);
  t.same(lost, [], 'the gateway passes every scenario the backend passes');
  const ran = new Set(viaGateway.legs.flatMap((l) => l.scenarios.map((s) => s.scenario)));
  for (const own of OWN) t.ok(ran.has(own), `${own} ran against the gateway`);
  t.same(
    viaGateway.failures.filter((f) => OWN.some((o) => f.startsWith(`${o}@`))),
    [],
    "the gateway's own checks pass",
  );
  t.notOk(d.lines.join('\n').includes(minted.body.token), 'the token is in no log line');
});
