// Issue 20 item 1, the review's gaps: a failure leaving Connection.request()
// (its message and its data) and every message built from a server's answer
// on the call path — missing capabilities, a resultType, an input request's
// key, a repeated cursor, the versions a server names — holds no piece of a
// secret the server was given, however the message cuts the server's text.
// A server that names a huge version gets a short message.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { Connection } from '../../services/transport/connection.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import type { ResolvedStdioServer } from '../../protocol/config.ts';
import { NODE, fixture, newTag, waitNoLeftovers } from '../helpers.ts';

t.setTimeout(120_000);

/** URL- and JSON-sensitive characters in it: its encoded forms differ from it. */
const KEY = 'Zq9/Wv+jX4k&PmRt"YbNcHgQ';

/** Every piece of the key (as given, JSON-escaped, URL-encoded) at least four characters long that `text` holds. */
function pieces(text: string): string[] {
  const found = new Set<string>();
  for (const form of [KEY, JSON.stringify(KEY).slice(1, -1), encodeURIComponent(KEY)]) {
    for (let i = 0; i + 4 <= form.length; i++) if (text.includes(form.slice(i, i + 4))) found.add(form.slice(i, i + 4));
  }
  return [...found];
}

function stdio(tag: string, mode: string): ResolvedStdioServer {
  return {
    type: 'stdio',
    command: NODE,
    args: [fixture('echo-key-server.ts'), mode],
    cwd: process.cwd(),
    env: { LEAKY_KEY: KEY, ALBEDO_TEST_TAG: tag, PATH: process.env.PATH ?? '' },
    startupTimeoutMs: 20_000,
    callTimeoutMs: 20_000,
    fingerprint: randomUUID(),
  };
}

function open(t: Test, mode: string): { conn: Connection; events: unknown[] } {
  const tag = newTag();
  const events: unknown[] = [];
  const conn = new Connection('c1', stdio(tag, mode), { name: 'test', version: '0' }, null, (name, payload) =>
    events.push([name, payload]),
  );
  t.teardown(async () => {
    await conn.close();
    const left = await waitNoLeftovers(tag);
    if (left.length) throw new Error(`processes outlived the test: ${left.join(', ')}`);
  });
  return { conn, events };
}

async function failure(p: Promise<unknown>): Promise<AlbedoError> {
  try {
    await p;
  } catch (err) {
    if (AlbedoError.is(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

t.test('tool-call failures: message and data hold no piece of the key', async (t) => {
  const { conn, events } = open(t, 'call');
  const opened = await conn.open();
  t.same(pieces(JSON.stringify(opened.warnings)), [], 'the repeated cursor, quoted across its cut');
  t.ok(
    opened.warnings.some((w) => w.includes('repeated cursor')),
    'the warning is there',
  );
  const codes: Record<string, string> = {
    caps: 'ALBEDO_INPUT_REQUIRED',
    kind: 'ALBEDO_INVALID_RESPONSE',
    input: 'ALBEDO_INPUT_REQUIRED',
    data: 'ALBEDO_SERVER_ERROR',
  };
  for (const [name, code] of Object.entries(codes)) {
    const err = await failure(conn.request({ method: 'tools/call', name }, 20_000));
    t.equal(err.code, code, `${name}: its code`);
    const shown = JSON.stringify({ message: err.message, data: err.data, json: err.toJSON() });
    t.same(pieces(shown), [], `${name}: no piece of the key in the message or the data`);
    t.ok(err.message.length <= 2_000, `${name}: the message is bounded`);
  }
  t.same(pieces(JSON.stringify(events)), [], 'nor in any event');
});

t.test('the versions a server names: no piece of the key across their cut', async (t) => {
  const { conn } = open(t, 'versions');
  const err = await failure(conn.open());
  t.equal(err.code, 'ALBEDO_ERA_REFUSED');
  t.same(pieces(JSON.stringify({ message: err.message, data: err.data })), []);
});

t.test('a server that names a 4 MB version: the failure is short', async (t) => {
  const { conn } = open(t, 'big');
  const err = await failure(conn.open());
  t.ok(err.message.length < 5_000, `${err.code}: ${err.message.length} characters`);
  t.ok(JSON.stringify(err.data ?? null).length < 5_000, 'its data too');
});
