// createAlbedo as a careless embedder calls it: a transport pool of no
// worker is refused before anything is made (it could place no connection);
// a service's options are taken as they were when createAlbedo checked them,
// so changing the object afterwards neither reaches the worker nor breaks the
// service's start (the sessions' services start long after); and a
// replacement module that names no service is refused like one that names
// another.
import t from 'tap';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createAlbedo } from '../../api/albedo.ts';
import { albedoFor, fixture, newTag, rejection, tempDir, tempHome } from '../helpers.ts';

t.test('a transport pool that is not a whole number of at least 1 is refused, and nothing is made', async (t) => {
  const dir = tempDir(t, 'albedo-workers-');
  for (const transportWorkers of [0, -1, 1.5, Number.NaN, '2' as unknown as number]) {
    const home = path.join(dir, 'home');
    const made = createAlbedo({ home, transportWorkers });
    // One that wrongly starts is closed, so the failure is reported rather than held open.
    made.then(
      (a) => a.close(),
      () => {},
    );
    const e = await rejection(made);
    t.match(e, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run', data: { path: ['transportWorkers'] } }, String(transportWorkers));
    t.notOk(existsSync(home), `${String(transportWorkers)}: nothing was made`);
  }
});

t.test("a service's options are the ones createAlbedo checked, whatever the embedder changes later", async (t) => {
  const pool: Record<string, unknown> = { threshold: 7 };
  const a = await albedoFor(t, newTag(), { home: tempHome(t), transportWorkers: 1, services: { catalogue: { options: { pool } } } });
  // Changed after the check, before the catalogue starts (with sessions): a new value, and one no thread can take.
  pool.threshold = 9;
  pool.onFull = () => {};
  t.doesNotThrow(() => a.sessions.start(), 'the services start');
  const stats = await a.kernel.call('catalogue', 'catalogue/stats', {});
  t.equal(stats.threshold, 7, 'the catalogue has the options as they were checked');
  t.equal(a.kernel.slots('composer').length, 1, 'the composer started too');
});

t.test('a replacement whose default export names no service is refused', async (t) => {
  const a = await albedoFor(t, newTag(), {
    home: tempHome(t),
    transportWorkers: 1,
    services: { catalogue: { module: fixture('services/unnamed-catalogue.ts') } },
    supervision: { restart: { intensity: 0 } },
  });
  a.sessions.start();
  const e = await rejection(a.kernel.call('catalogue', 'catalogue/profiles', {}));
  t.match(e, { code: 'ALBEDO_SERVICE_FAILED', outcome: 'not_run' }, 'its worker never became ready');
});
