// A gateway's session is an ordinary session of the daemon: a daemon killed with
// SIGKILL leaves it in its records, and the next daemon restores it and serves the
// gateway from it (the same session id, no second session), while a definition
// changed meanwhile gets a new session and the old one is closed.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { newTag, tempHome } from '../helpers.ts';
import { sdkServer, startDaemon, type Daemon } from '../daemon/harness.ts';

t.setTimeout(170_000);

async function listVia(d: Daemon, name: string): Promise<string[]> {
  const c = new Client({ name: 'restore-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  const url = new URL(`http://127.0.0.1:${d.info.port}/mcp/gateways/${name}`);
  await c.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${d.info.token}` } } }));
  const names = (await c.listTools()).tools.map((x) => x.name);
  await c.close();
  return names;
}

async function gatewaySessions(d: Daemon): Promise<Array<{ id: string; label?: string }>> {
  const r = await d.call('GET', '/v1/sessions');
  return (r.body.sessions as Array<{ id: string; label?: string }>).filter((s) => s.label?.startsWith('gateway:'));
}

t.test('a killed daemon’s gateway session is restored and served again; a changed definition gets a new one', async (t) => {
  const tag = newTag();
  const home = tempHome(t);
  const write = (gateways: Record<string, unknown>): void =>
    writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways }), {
      mode: 0o600,
    });
  write({ g: { servers: { include: ['sdk'] } } });
  const first = await startDaemon(t, home, { tag });
  const before = await listVia(first, 'g');
  t.ok(before.length > 0, 'served');
  const [s1] = await gatewaySessions(first);
  t.ok(s1, 'the gateway has a session');
  await first.stop('SIGKILL');

  const second = await startDaemon(t, home, { tag });
  const restored = await gatewaySessions(second);
  t.same(
    restored.map((s) => s.id),
    [s1!.id],
    'the next daemon restored it',
  );
  t.same(await listVia(second, 'g'), before, 'and serves the same tools from it');
  t.same(
    (await gatewaySessions(second)).map((s) => s.id),
    [s1!.id],
    'no second session was opened',
  );
  await second.stop('SIGKILL');

  // The definition changed while no daemon ran: the restored session is not this gateway's any more.
  write({ g: { servers: { include: ['sdk'] }, tools: 'deferred' } });
  const third = await startDaemon(t, home, { tag });
  const names = await listVia(third, 'g');
  t.ok(names.includes('mcp_search_tools'), 'the new definition is served (deferred)');
  const now = await gatewaySessions(third);
  t.equal(now.length, 1, 'one gateway session');
  t.not(now[0]!.id, s1!.id, 'a new one: the old one was closed');
});
