// `albedo status` shows the gateways (issue 22 item 8) against a real daemon:
// a real MCP client (the official SDK's stdio client) connected to a
// pass-through gateway through `albedo gateway NAME`, one call made; status
// lists each gateway with that client (its declared name, era, transport,
// since, calls) and a gateway without clients as one row of `—`; `--json`
// has the same as `gateways`, each client with the API's fields.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';
import { piped, type CliEnv } from './cli-harness.ts';

t.setTimeout(170_000);

t.test('status: the gateways and who is connected to each', async (t) => {
  const e: CliEnv = { home: tempHome(t), tag: newTag() };
  const gateways = { all: { servers: { exclude: ['ghost'] } }, direct: { server: 'sdk' } };
  writeFileSync(path.join(e.home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways }), {
    mode: 0o600,
  });
  const d = await startDaemon(t, e.home, { tag: e.tag });
  t.equal((await d.call('POST', '/v1/gateways/all/tokens')).status, 201, 'a token for all');

  const before = await piped(e, ['status']);
  t.equal(before.code, 0, before.stderr);
  t.match(before.stdout, /^gateways: 2, 0 clients connected$/m, 'the count');
  t.match(before.stdout, /^GATEWAY\s+KIND\s+CLIENT\s+ERA\s+TRANSPORT\s+SINCE\s+CALLS$/m, 'the columns');
  t.match(before.stdout, /^all\s+composed\s+—\s+—\s+—\s+—\s+—$/m, 'no client: one row of —');
  t.match(before.stdout, /^direct\s+pass-through\s+—\s+—\s+—\s+—\s+—$/m);

  const env = { ...process.env, ALBEDO_HOME: e.home, TEST_SERVER_TAG: e.tag } as Record<string, string>;
  const client = new Client({ name: 'status-host', version: '4.5.6' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', 'direct'], env }));
  t.teardown(() => client.close());
  const era = client.getNegotiatedProtocolVersion();
  const r = (await client.callTool({ name: 'echo', arguments: { text: 'hi' } })) as any;
  t.equal(r.content[0].text, 'hi', 'a call through the gateway');

  const now = await piped(e, ['status']);
  t.equal(now.code, 0, now.stderr);
  t.match(now.stdout, /^gateways: 2, 1 client connected$/m);
  const row = now.stdout.split('\n').find((l) => l.startsWith('direct '));
  t.match(
    row,
    new RegExp(`^direct\\s+pass-through\\s+status-host 4\\.5\\.6\\s+${era}\\s+stdio\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\s+1$`),
  );
  t.match(now.stdout, /^all\s+composed\s+—/m, 'the other still has none');

  const js = JSON.parse((await piped(e, ['status', '--json'])).stdout);
  t.equal(js.gateways.length, 2);
  t.match(js.gateways[0], { name: 'all', kind: 'composed', enabled: true, problems: ['server_not_configured'], tokens: 1, clients: [] });
  const [c] = js.gateways[1].clients;
  t.match(js.gateways[1], { name: 'direct', kind: 'pass-through', problems: [], tokens: 0 });
  t.match(c, { name: 'status-host 4.5.6', era, transport: 'stdio', calls: 1 });
  t.ok(typeof c.id === 'string' && c.id.length > 0, 'its id');
  t.ok(Date.parse(c.since) <= Date.parse(c.lastSeen), 'since and lastSeen are times');
});
