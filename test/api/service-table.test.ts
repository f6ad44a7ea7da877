// The service table (api/service-table.ts) through createAlbedo: a bad
// `services` option is refused before anything starts; options are laid
// over the built-in ones; services start when they always did (transport with
// the instance, settings, catalogue and composer with sessions, OAuth at a
// sign-in); and close stops the composer before the services it calls, whose
// stop hook still reaches them.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createAlbedo, type AlbedoOptions } from '../../api/albedo.ts';
import { TABLE_SERVICES } from '../../api/service-table.ts';
import { albedoFor, fixture, newTag, rejection, tempDir, tempHome } from '../helpers.ts';

const RECORDER = fixture('services/stop-recorder.ts');
const serviceModule = (name: string): string => fileURLToPath(new URL(`../../services/${name}/service.ts`, import.meta.url));

t.test('a bad services option is refused with ALBEDO_INVALID_ARGUMENT, and nothing is started', async (t) => {
  const dir = tempDir(t, 'albedo-table-');
  const cases: Array<[string, unknown, (string | number)[]]> = [
    ['not an object', [], ['services']],
    ['an unknown service', { search: {} }, ['services', 'search']],
    ['an entry that is not an object', { catalogue: 'memory' }, ['services', 'catalogue']],
    ['an unknown field', { catalogue: { modul: RECORDER } }, ['services', 'catalogue', 'modul']],
    ['a module over https', { catalogue: { module: new URL('https://example.com/catalogue.ts') } }, ['services', 'catalogue', 'module']],
    ['a data: module', { catalogue: { module: 'data:text/javascript,export default {}' } }, ['services', 'catalogue', 'module']],
    ['a relative path', { catalogue: { module: 'test/fixtures/services/stop-recorder.ts' } }, ['services', 'catalogue', 'module']],
    ['a package name', { catalogue: { module: 'albedo-memory-catalogue' } }, ['services', 'catalogue', 'module']],
    ['a file that does not exist', { catalogue: { module: path.join(dir, 'none.ts') } }, ['services', 'catalogue', 'module']],
    ['a directory', { catalogue: { module: pathToFileURL(dir) } }, ['services', 'catalogue', 'module']],
    ['options that are an array', { catalogue: { options: [1] } }, ['services', 'catalogue', 'options']],
    ['options holding a function', { catalogue: { options: { onSave: () => {} } } }, ['services', 'catalogue', 'options']],
    ['options that are a class instance', { catalogue: { options: new Map() } }, ['services', 'catalogue', 'options']],
    // The instance's own: a composer under another owner would restore and close none of this instance's sessions.
    ['a composer owner', { composer: { options: { owner: 'someone-else' } } }, ['services', 'composer', 'options', 'owner']],
    ['a composer home', { composer: { options: { home: '/tmp' } } }, ['services', 'composer', 'options', 'home']],
    ['a settings home', { settings: { options: { home: '/tmp' } } }, ['services', 'settings', 'options', 'home']],
  ];
  for (const [what, services, at] of cases) {
    const home = path.join(dir, 'home');
    const made = createAlbedo({ home, services: services as AlbedoOptions['services'] });
    // One that wrongly starts is closed, so the failure is reported rather than held open.
    made.then(
      (a) => a.close(),
      () => {},
    );
    const e = await rejection(made);
    t.match(e, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run', data: { path: at } }, what);
    t.notOk(existsSync(home), `${what}: nothing was made`);
  }
});

t.test('every service of the table may be named; a module as a file: URL or an absolute path', async (t) => {
  t.same([...TABLE_SERVICES], ['transport', 'oauth', 'settings', 'catalogue', 'composer']);
  const a = await albedoFor(t, newTag(), {
    home: null,
    transportWorkers: 1,
    services: { transport: { module: pathToFileURL(serviceModule('transport')) }, oauth: { module: serviceModule('oauth') } },
  });
  t.equal(a.kernel.slots('transport').length, 1, 'the transport started with the instance');
});

t.test('services start when they always did; options are laid over the built-in ones', async (t) => {
  const home = tempHome(t);
  const a = await albedoFor(t, newTag(), {
    home,
    transportWorkers: 1,
    services: { catalogue: { options: { pool: { threshold: 7 } } } },
  });
  t.equal(a.kernel.slots('transport').length, 1, 'the transport starts with the instance');
  for (const s of ['oauth', 'settings', 'catalogue', 'composer'] as const) t.equal(a.kernel.slots(s).length, 0, `${s} waits`);
  a.sessions.start();
  for (const s of ['settings', 'catalogue', 'composer'] as const) t.equal(a.kernel.slots(s).length, 1, `${s} starts with sessions`);
  t.equal(a.kernel.slots('oauth').length, 0, 'OAuth waits for a sign-in');
  // The built-in catalogue needs its storePath: it answers, so the table's options are there beside the embedder's.
  const stats = await a.kernel.call('catalogue', 'catalogue/stats', {});
  t.equal(stats.threshold, 7, "the embedder's option reached the service");
});

t.test('close stops the composer first; its stop hook still reaches settings, catalogue and transport', async (t) => {
  const home = tempHome(t);
  const log = path.join(home, 'stops.log');
  // Each service is the real one wrapped by the recorder, which notes its stop (test/fixtures/services/stop-recorder.ts).
  const wrapped = (name: string, calls: string[] = []) => ({ module: RECORDER, options: { wrap: serviceModule(name), log, calls } });
  const a = await albedoFor(t, newTag(), {
    home,
    transportWorkers: 1,
    services: {
      transport: wrapped('transport'),
      settings: wrapped('settings'),
      catalogue: wrapped('catalogue'),
      composer: wrapped('composer', ['settings', 'catalogue', 'transport']),
    },
  });
  a.sessions.start();
  await Promise.all(['transport', 'settings', 'catalogue', 'composer'].map((s) => a.kernel.callAny(s, 'recorder/ping', null)));
  t.same(await a.kernel.call('catalogue', 'catalogue/profiles', {}), [
    'portable',
    'openai',
    'openai-strict',
    'anthropic',
    'gemini',
    'bedrock',
  ]);
  await a.close();
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  t.same(lines.slice(0, 4), [
    'composer called settings: answered',
    'composer called catalogue: answered',
    'composer called transport: answered',
    'composer stopped',
  ]);
  t.same(lines.slice(4).sort(), ['catalogue stopped', 'settings stopped', 'transport stopped'], 'then what it depends on');
});
