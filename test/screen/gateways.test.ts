// The /mcp screen's gateways view (issue 22 item 8): `g` shows the daemon's
// gateways (name, kind, tokens, clients, problem), read again while it is
// open; the selected one's ways in and the clients connected now — here a real
// MCP client (the official SDK's stdio client) through `albedo gateway direct`,
// its declared name, era, transport and calls, the count going up after a call.
// Read only: no key of the view changes a gateway. esc goes back to the list.
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { NODE, newTag, tempHome } from '../helpers.ts';
import { BIN, sdkServer, startDaemon } from '../daemon/harness.ts';
import { openScreen, rowOf } from './screen-harness.ts';

t.setTimeout(170_000);

const HEADER = /^ {3}NAME\s+KIND\s+TOKENS\s+CLIENTS\s+PROBLEM$/m;

t.test('g shows the gateways and the selected one’s clients; esc goes back', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const gateways = { all: { servers: { exclude: ['ghost'] } }, direct: { server: 'sdk' } };
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ mcp: { servers: { sdk: sdkServer() } }, gateways }), { mode: 0o600 });
  const d = await startDaemon(t, home, { tag });
  for (const _ of [1, 2]) t.equal((await d.call('POST', '/v1/gateways/all/tokens')).status, 201, 'a token for all');

  const env = { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag } as Record<string, string>;
  const client = new Client({ name: 'screen-host', version: '7.8.9' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(new StdioClientTransport({ command: NODE, args: [BIN, 'gateway', 'direct'], env }));
  t.teardown(() => client.close());
  const era = client.getNegotiatedProtocolVersion()!;
  await client.callTool({ name: 'echo', arguments: { text: 'one' } });

  const s = openScreen(t, { home, cols: 120 });
  await s.waitFor(/^ › sdk /m);
  t.match(s.text(), /g gateways/, 'the list names the key');
  s.type('g');
  await s.waitFor('Gateways  2 defined');
  await s.waitFor(HEADER);
  const all = /^ › all\s+composed\s+2\s+0\s+! no server "ghost" is configured/;
  t.match(rowOf(s.lines(), 'all'), all, 'its tokens, no client, its problem');
  t.match(rowOf(s.lines(), 'direct'), /^ {3}direct\s+pass-through\s+0\s+1\s+—$/, 'one client');
  t.match(s.text(), /^ all {2}every enabled server but ghost, composed$/m, 'what the selected one serves');
  t.match(s.text(), new RegExp(`stdio: albedo gateway all · http: http://127\\.0\\.0\\.1:${d.info.port}/mcp/gateways/all`), 'the ways in');
  t.match(s.text(), /○ no client connected/);

  s.type('j');
  await s.waitFor(/^ › direct /m);
  await s.waitFor(/^ {3}CLIENT\s+ERA\s+TRANSPORT\s+SINCE\s+CALLS$/m);
  const row = new RegExp(
    `^ {3}screen-host 7\\.8\\.9\\s+${era.replace(/[.]/g, '\\.')}\\s+stdio\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\s+`,
  );
  t.match(s.text(), new RegExp(row.source + '1$', 'm'), "the client's name, era, transport, since and calls");
  // Read again while open: another call shows.
  await client.callTool({ name: 'echo', arguments: { text: 'two' } });
  await s.waitFor(new RegExp(row.source + '2$', 'm'));
  t.pass('the count followed the second call');

  // Nothing the view is given changes a gateway.
  s.type('dxenk');
  await s.waitFor(/^ › all /m);
  const after = await d.call('GET', '/v1/gateways');
  t.same(
    after.body.gateways.map((g: any) => [g.name, g.tokens.length]),
    [
      ['all', 2],
      ['direct', 0],
    ],
    'read only',
  );

  s.press('esc');
  await s.waitFor(/^ {3}NAME\s+TYPE\s+STATE\s+TOOLS\s+SIGN-IN\s+PROBLEM$/m);
  s.type('q');
  t.equal(await s.exited, 0);

  // A narrow terminal: rows cut, never wrapped (SINCE left out), so the tables keep their shape.
  const n = openScreen(t, { home, cols: 44, rows: 20 });
  await n.waitFor(/^ › sdk /m);
  n.type('g');
  await n.waitFor('Gateways  2 defined');
  n.type('j');
  await n.waitFor(/^ › dir… /m);
  await n.waitFor(/^ {3}CLIENT\s+ERA\s+TRANSPORT\s+CALLS$/m);
  t.match(n.text(), /^ {3}screen-host … \S+\s+stdio\s+2$/m, 'a client row on one line');
  t.match(n.text(), /^ {3}NAME KIND\s+TOKENS CLIENTS PROBLEM$/m, 'the header on one line');
  n.type('q');
  t.equal(await n.exited, 0);
});

t.test('no gateway: the view says how to make one', async (t) => {
  const home = tempHome(t);
  await startDaemon(t, home, { tag: newTag() });
  const s = openScreen(t, { home });
  await s.waitFor('No servers configured yet');
  s.type('g');
  await s.waitFor('No gateway yet. albedo gateway add NAME makes one');
  s.type('q');
  t.equal(await s.exited, 0);
});
