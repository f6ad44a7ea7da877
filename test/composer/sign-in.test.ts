// A server that needs a sign-in (docs/design.md, "Sign-in" and "Servers
// that come back"), against a real authorization server (oidc-provider) in
// front of an official-SDK MCP server: it is left out with a warning and a
// line in the MCP context saying how to sign in, its calls fail with
// ALBEDO_NEEDS_SIGN_IN (not run), and once signed in a come-back probe finds
// it and it joins after the next turn. A saved server whose tokens stop
// working leaves the session after the turn in the same way.
import t from 'tap';
import net from 'node:net';
import path from 'node:path';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { startOAuthStack } from '../fixtures/oauth-stack.ts';
import { browserStandIn } from '../fixtures/browser.ts';
import { albedoFor, fixture, newTag, rejection, server, tempHome, waitNoLeftovers } from '../helpers.ts';
import { FakeClock, FakeSettings, Recorder, composerFor, entry, statusOf, text, toolsOf } from '../fixtures/composer-ports.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

/** A port nobody listens on right now, for the sign-in's loopback callback. */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const HINT = (name: string): string => `[how to sign in to ${name}]`;

t.test('needs a sign-in: left out, context line, calls not run; signed in, it comes back after the turn', async (t) => {
  const stack = await startOAuthStack();
  t.teardown(() => stack.close());
  const tag = newTag();
  const home = tempHome(t);
  const credsPath = path.join(home, 'creds.json');
  const cfg = { url: stack.mcpUrl, oauth: { callbackPort: await freePort() } };
  const a = await albedoFor(t, tag, {
    home,
    transportWorkers: 1,
    authorize: async ({ url }) => {
      await browserStandIn(url);
    },
  });
  const retryMs = 5_000;
  const settings = new FakeSettings(
    [entry('sdk', server(tag, fixture('sdk-server.ts'))), entry('secure', cfg, { credsPath, fingerprint: 'secure-signed-out' })],
    retryMs,
  );
  const clock = new FakeClock();
  const { composer, store } = composerFor(t, a, settings, clock, { signInHint: HINT });
  const rec = new Recorder();
  const s = await composer.open({}, rec.listener);

  const st = statusOf(s, 'secure');
  t.same([st.state, st.advertised, st.reason?.code], ['needs_sign_in', false, 'ALBEDO_NEEDS_SIGN_IN']);
  t.equal(st.nextProbeAt, clock.now() + retryMs, 'signing in is a way of coming back: it is probed too');
  t.same(rec.states('secure'), ['starting', 'needs_sign_in']);
  t.ok(
    rec.of('warning').some((w) => w.server === 'secure' && w.code === 'ALBEDO_NEEDS_SIGN_IN'),
    'named in a warning',
  );
  t.ok(s.context().includes(HINT('secure')), 'the MCP context says how to sign in');
  t.equal(statusOf(s, 'sdk').state, 'ready', 'the others load as usual');
  const e = await rejection(s.call('secure/whoami', {}));
  t.equal(e.code, 'ALBEDO_NEEDS_SIGN_IN');
  t.equal(e.outcome, 'not_run', 'the request did not run');

  t.equal((await a.signIn(cfg, { name: 'secure' })).state, 'signed_in');
  // The settings' fingerprint covers the sign-in identity: a sign-in changes it.
  settings.replace(entry('secure', cfg, { credsPath, fingerprint: 'secure-signed-in' }));
  clock.set(st.nextProbeAt!);
  await s.activity('submit');
  await s.idle();
  t.equal(rec.of('probed').at(-1)?.ok, true, 'the probe found it up');
  t.same([statusOf(s, 'secure').state, statusOf(s, 'secure').pending, statusOf(s, 'secure').advertised], ['ready', true, false]);
  t.ok(store.current('secure', 'secure-signed-in'), 'its catalogue was saved under the new fingerprint');
  await s.activity('turn_end');
  t.equal(s.generation, 2);
  t.same(rec.of('refreshed').at(-1)?.servers, ['secure']);
  t.ok(toolsOf(s, 'secure').length >= 1, 'its tools are advertised');
  t.notOk(s.context().includes(HINT('secure')), 'no sign-in line any more');
  t.match(text(await s.call('secure/whoami', {})), /sub=alice/, 'calls reach it with the token');
  await s.close();

  // The tokens stop working: the next session advertises it from the saved catalogue, learns it needs a sign-in,
  // and it leaves after the turn; its calls meanwhile fail as not run.
  stack.refuseAllTokens(true);
  const rec2 = new Recorder();
  const s2 = await composer.open({}, rec2.listener);
  t.equal(toolsOf(s2, 'secure').length >= 1, true, 'advertised at once from the saved catalogue');
  await s2.idle();
  t.same([statusOf(s2, 'secure').state, statusOf(s2, 'secure').pending], ['needs_sign_in', true]);
  const e2 = await rejection(s2.call('secure/whoami', {}));
  t.same([e2.code, e2.outcome], ['ALBEDO_NEEDS_SIGN_IN', 'not_run']);
  await s2.activity('turn_end');
  t.same(toolsOf(s2, 'secure'), [], 'left out after the turn');
  t.same(rec2.of('refreshed').at(-1)?.servers, ['secure']);
  t.ok(s2.context().includes(HINT('secure')), 'with the sign-in line');
  stack.refuseAllTokens(false);
  await s2.close();
  t.same(await waitNoLeftovers(tag), []);
});
