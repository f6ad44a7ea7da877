// Writes while a server is tried (issue 26: daemon/writes.ts lets the tries
// of different servers run at once). While one save of `slow` is held in
// its try: a save of another server goes through; a second save of `slow`
// and its removal wait, and then run in the order they came, each on what
// the one before it wrote; an API write of the section and a hand edit of
// another entry land meanwhile and stay. Nothing is half-written.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { entry, sdkServer, srv, startDaemon, type Reply } from './harness.ts';

t.setTimeout(170_000);

const GATED = fixture('gated-server.ts');

t.test('saves of one server queue behind its try; others go on meanwhile', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const file = path.join(home, 'extensions.json');
  writeFileSync(
    file,
    `${JSON.stringify({ mcp: { servers: { other: { command: NODE, args: ['-e', '0'], enabled: false } } } }, null, 2)}\n`,
  );
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-gate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const slow = (extra: Record<string, unknown> = {}) => entry(NODE, [GATED, dir], { startupTimeoutMs: 120_000, ...extra });

  const order: string[] = [];
  const settle = (what: string, p: Promise<Reply>): Promise<Reply> =>
    p.then((r) => {
      order.push(what);
      return r;
    });
  const first = settle('first', d.call('PUT', srv('slow'), { body: slow() }));
  await until(() => existsSync(path.join(dir, 'started')), 120_000, 'the first try to start the server');
  const second = settle('second', d.call('PUT', srv('slow'), { body: slow({ callTimeoutMs: 12_345 }) }));
  const removal = settle('removal', d.call('DELETE', srv('slow')));

  const quick = await d.call('PUT', srv('quick'), { body: sdkServer() });
  t.equal(quick.status, 201, `another server is saved while slow is tried (${quick.text})`);
  const section = await d.call('PATCH', '/v1/mcp', { body: { retryMs: 4_321 } });
  t.equal(section.status, 200, section.text);
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  doc.mcp.servers.other.args = ['-e', '1'];
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  t.same(order, [], 'neither save of slow nor its removal answered while its first try is held');

  writeFileSync(path.join(dir, 'open'), '');
  const [a, b, c] = await Promise.all([first, second, removal]);
  t.equal(a.status, 201, a.text);
  t.equal(b.status, 200, `the second save replaced what the first wrote (${b.text})`);
  t.equal(b.body?.server?.config?.callTimeoutMs, 12_345);
  t.equal(c.status, 204, c.text);
  t.same(order, ['first', 'second', 'removal'], 'in the order they came');

  const after = JSON.parse(readFileSync(file, 'utf8'));
  t.notOk(after.mcp.servers.slow, 'slow is removed');
  t.ok(after.mcp.servers.quick, 'quick stays');
  t.same(after.mcp.servers.other.args, ['-e', '1'], 'the hand edit of another entry stays');
  t.equal(after.mcp.retryMs, 4_321, 'and so does the section written meanwhile');
  t.equal((await d.call('GET', srv('slow'))).status, 404);
});
