// An editor that passes many servers at once: they are started at most eight at a time (each is a process, a launcher
// and a share of a transport worker), and all of them are published. The fixture answers nothing until a second after
// it started and logs when it starts and when it first answers, so the log's order alone says how many were starting
// at once, however fast the machine is.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { OverlayServer } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { NODE, albedoFor, fixture, newTag, tempDir } from '../helpers.ts';
import { sessionHome } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

t.test('twelve editor servers: at most eight starting at once, all twelve published', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({});
  const work = tempDir(t, 'albedo-ws-');
  const log = path.join(work, 'starts.log');
  const servers: OverlayServer[] = Array.from({ length: 12 }, (_, i) => ({
    name: `slow${i}`,
    command: NODE,
    args: [fixture('composer-slow-server.ts'), '1', log],
    env: [{ name: 'ALBEDO_TEST_TAG', value: tag }],
  }));
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  const s = await albedo.sessions.open();
  const r = await s.setOverlay(work, servers);
  t.equal(r.servers.length, 12, 'all published');
  t.equal(s.status().filter((x) => x.state === 'ready').length, 12, 'all ready');

  const events = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { event: string; pid: number });
  let starting = 0;
  let most = 0;
  for (const e of events) {
    if (e.event === 'start') most = Math.max(most, ++starting);
    else if (e.event === 'answering') starting--;
  }
  t.equal(events.filter((e) => e.event === 'start').length, 12, 'one process each');
  t.ok(most <= 8, `at most eight starting at once (${most})`);
  t.ok(most >= 2, 'but more than one');
});
