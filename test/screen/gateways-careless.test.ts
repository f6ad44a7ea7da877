// The /mcp screen's gateways view on a real daemon, for a gateway written by hand with `include: []`: the selected
// one is said to serve "no server", not an empty list before ", composed".
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { newTag, tempHome } from '../helpers.ts';
import { startDaemon } from '../daemon/harness.ts';
import { openScreen } from './screen-harness.ts';

t.setTimeout(120_000);

t.test('a gateway that includes no server says so', async (t) => {
  const home = tempHome(t);
  writeFileSync(path.join(home, 'extensions.json'), JSON.stringify({ gateways: { none: { servers: { include: [] } } } }), { mode: 0o600 });
  await startDaemon(t, home, { tag: newTag() });
  const s = openScreen(t, { home, cols: 100 });
  await s.waitFor('No servers configured yet');
  s.type('g');
  await s.waitFor('Gateways  1 defined');
  await s.waitFor(/^ none {2}no server, composed$/m);
  t.pass('"no server, composed"');
  s.type('q');
  t.equal(await s.exited, 0);
});
