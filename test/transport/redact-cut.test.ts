// A server's own output cannot carry its secrets out past a cut (issue 20,
// item 1): real servers that print their key where Albedo quotes them — on
// stdout as lines that are not JSON-RPC, on stderr across the start of the
// kept 4 KiB, in a JSON-RPC error across the quote's end, in an HTTP error
// body across the 200-character excerpt — through the real daemon (strict
// save's 409, a session's warnings, status and events), `albedo probe` and
// connect(). No piece of the key four characters long is anywhere.
import t from 'tap';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { NODE, ROOT, fixture, newTag, rejection, tempHome, until, albedoFor } from '../helpers.ts';
import { entry, follow, srv, startDaemon, BIN, type Daemon } from '../daemon/harness.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';

t.setTimeout(170_000);
t.teardown(closeCatalogueStores);

/** A quote and a backslash in it: JSON escapes them, so the key is looked for as JSON prints it too. */
const KEY = 'Zq9"Wv\\jX4kPmRtYbNcHgQ';

/** Every piece of the key (as given and JSON-escaped) at least four characters long that `text` holds. */
function pieces(text: string): string[] {
  const found = new Set<string>();
  for (const form of [KEY, JSON.stringify(KEY).slice(1, -1)]) {
    for (let i = 0; i + 4 <= form.length; i++) if (text.includes(form.slice(i, i + 4))) found.add(form.slice(i, i + 4));
  }
  return [...found];
}

/** Every string in a parsed value (so a quote inside a message is looked at as the message holds it). */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

const leaky = (mode: string): Record<string, unknown> =>
  entry(NODE, [fixture('leaky-server.ts'), mode], { secrets: { env: { LEAKY_KEY: KEY } } });

t.test("through the daemon: strict save's 409, a session's warnings, status and events hold no piece of the key", async (t) => {
  const tag = newTag();
  const d = await startDaemon(t, tempHome(t), { tag });
  const seen: string[] = [];
  const api = async (...a: Parameters<Daemon['call']>) => {
    const r = await d.call(...a);
    seen.push(...strings(r.body));
    return r;
  };

  const exited = await api('PUT', srv('dies'), { body: leaky('exit') });
  t.same([exited.status, exited.body?.error?.code], [409, 'ALBEDO_SERVER_EXITED'], 'the key across the start of the stderr tail: refused');
  t.same(pieces(strings(exited.body).join('\n')), [], 'no piece of the key in the 409');
  const failing = await api('PUT', srv('fails'), { body: leaky('error') });
  t.equal(failing.status, 409, "the key across the end of a JSON-RPC error's quote: refused");
  t.same(pieces(strings(failing.body).join('\n')), [], 'no piece of the key in that 409');

  const saved = await api('PUT', srv('noisy'), { body: leaky('junk') });
  t.equal(saved.status, 201, 'a server that writes junk on stdout still connects');
  const opened = await api('POST', '/v1/sessions', { body: {} });
  t.equal(opened.status, 201);
  const id = opened.body.id;
  // An id of another run: every kept event is replayed, from the first.
  const stream = await follow(d, id, 'zzzzzzzz-1');
  t.teardown(stream.close);
  await until(() => stream.events.some((e) => e.event === 'warning'), 30_000, 'a warning event');
  t.ok(
    strings(opened.body)
      .concat(stream.events.map((e) => e.data))
      .some((s) => s.includes('[redacted]')),
    'the key was there, and is marked',
  );
  await api('GET', `/v1/sessions/${id}`);
  await api('GET', '/v1/mcp/servers');
  await stream.close();
  seen.push(...stream.events.map((e) => e.data));
  t.same(pieces(seen.join('\n')), [], 'no piece of the key in any answer or event');
});

t.test('albedo probe: its warnings hold no piece of the key', async (t) => {
  for (const json of [true, false]) {
    const args = [BIN, 'probe', ...(json ? ['--json'] : []), '--env', `LEAKY_KEY=${KEY}`, '--', NODE, fixture('leaky-server.ts'), 'junk'];
    const r = spawnSync(NODE, args, { encoding: 'utf8', timeout: 120_000, cwd: ROOT });
    t.equal(r.status, 0, `${json ? '--json' : 'text'}: exit 0`);
    const out = json ? strings(JSON.parse(r.stdout)).join('\n') : r.stdout;
    t.match(out, /redacted/, 'the junk was reported');
    t.same(pieces(out + r.stderr), [], `${json ? '--json' : 'text'}: no piece of the key`);
  }
});

t.test('an HTTP error body with the key across the 200-character excerpt: no piece of it in the error', async (t) => {
  const server = http.createServer((req, res) => {
    const sent = String(req.headers['x-api-key']);
    res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request:\n${'b'.repeat(200 - 13 - 6)}${sent} was refused`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  process.env.ALBEDO_TEST_API_KEY = KEY;
  t.teardown(() => {
    delete process.env.ALBEDO_TEST_API_KEY;
  });
  const albedo = await albedoFor(t, newTag(), { transportWorkers: 1 });
  const err = await rejection(albedo.connect({ url, headers: { 'X-Api-Key': { env: 'ALBEDO_TEST_API_KEY' } } } as never));
  t.equal(err.code, 'ALBEDO_HTTP_ERROR');
  t.same(pieces(strings({ message: err.message, data: err.data }).join('\n')), [], 'no piece of the key in the message or its data');
});
