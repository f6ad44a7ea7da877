// Secret values a server was given never come back in text Albedo composes
// from the server's output: a stdio server that prints its key to stderr and
// exits, an HTTP server that echoes the Authorization header in an error
// body. Through connect() and through a session (status reasons, events),
// with real processes and real HTTP on loopback.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { redact, secretValues } from '../../protocol/redact.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { NODE, albedoFor, newTag, rejection } from '../helpers.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(120_000);
t.teardown(closeCatalogueStores);

const KEY = 'sk-live-9f8e7d6c5b4a';
const LEAKER = `process.stderr.write('fatal: bad key ' + process.env.LEAKY_KEY + '\\n'); process.exit(3)`;

t.test(
  "a stdio server that prints its key on the way out: the key is cut from the error, its data and the session's reasons",
  async (t) => {
    process.env.ALBEDO_TEST_LEAKY = KEY;
    t.teardown(() => {
      delete process.env.ALBEDO_TEST_LEAKY;
    });
    const tag = newTag();
    const albedo = await albedoFor(t, tag, { transportWorkers: 1 });
    const err = await rejection(albedo.connect({ command: NODE, args: ['-e', LEAKER], env: { LEAKY_KEY: { env: 'ALBEDO_TEST_LEAKY' } } }));
    t.equal(err.code, 'ALBEDO_SERVER_EXITED');
    t.notOk(JSON.stringify({ message: err.message, data: err.data }).includes(KEY), 'not in the message nor its data');
    t.match(err.message, /\[redacted\]/, 'the place it was is marked');

    const h = sessionHome(t, tag);
    h.write({ leaky: { command: NODE, args: ['-e', LEAKER], env: { LEAKY_KEY: { env: 'ALBEDO_TEST_LEAKY' } } } });
    const home = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
    const s = await home.sessions.open();
    const seen = JSON.stringify({ status: s.status(), warnings: s.warnings(), context: s.context() });
    t.match(s.status(), [{ name: 'leaky', state: 'left_out' }]);
    t.notOk(seen.includes(KEY), 'not in the status, warnings or context of a session');
  },
);

t.test('an HTTP server that echoes the Authorization header in an error body: the token is cut from the error', async (t) => {
  const server = http.createServer((req, res) => {
    res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request; you sent ${req.headers.authorization}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  process.env.ALBEDO_TEST_BEARER = KEY;
  t.teardown(() => {
    delete process.env.ALBEDO_TEST_BEARER;
  });
  const albedo = await albedoFor(t, newTag(), { transportWorkers: 1 });
  const err = await rejection(albedo.connect({ url, bearerTokenEnvVar: 'ALBEDO_TEST_BEARER' }));
  t.equal(err.code, 'ALBEDO_HTTP_ERROR');
  t.notOk(JSON.stringify({ message: err.message, data: err.data }).includes(KEY), 'neither the token nor the header');
});

t.test('secretValues and redact: env values, header values and the bearer token alone; short values left', async (t) => {
  const stdio = {
    type: 'stdio',
    command: 'x',
    args: [],
    cwd: '/',
    env: { HOME: '/home/a', PATH: '/bin', TOKEN: 'abcdefgh', ON: '1' },
  } as never;
  t.same(secretValues(stdio), ['abcdefgh'], 'HOME and PATH are not the server\'s, "1" is too short to be a secret');
  const httpServer = { type: 'http', url: 'http://x/', headers: { Authorization: 'Bearer tok-123456', 'X-Key': 'xk-7890' } } as never;
  t.same(secretValues(httpServer), ['Bearer tok-123456', 'tok-123456', 'xk-7890']);
  t.equal(redact('a tok-123456 b xk-7890 c 1', secretValues(httpServer)), 'a [redacted] b [redacted] c 1');
});
