// Swapping services (AlbedoOptions.services): the session tests' core cases
// run over each entry of SWAPS, the built-in services first, then each
// replacement module implementing a service's contract. A core run: a
// session over real servers (server-everything, the SDK fixture, a server
// whose start the test holds) advertises their tools and calls them; a second
// session advertises from the saved catalogues at once, while the held server
// has answered nothing; an edit of the settings reaches the open session; its
// close and the instance's reap every server. Each swap then shows it really
// ran (`used`): the memory catalogue wrote nothing to LMDB, the built-in one did.
//
// To add a swap, append to SWAPS: `services` goes to createAlbedo, `write`
// writes the servers where the swap's settings service reads them (default:
// extensions.json), `used` checks after the close that the swap served.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as stringifyToml } from 'smol-toml';
import type { ServiceOverrides } from '../../api/albedo.ts';
import type { AlbedoSession } from '../../api/sessions.ts';
import { CatalogueStore, closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, albedoFor, fixture, newTag, until } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf, type SessionHome } from '../fixtures/session-home.ts';

t.setTimeout(300_000);
t.teardown(closeCatalogueStores);

export interface Swap {
  name: string;
  services: ServiceOverrides;
  /** Writes the servers where this swap's settings service reads them; default: `$ALBEDO_HOME/extensions.json`. */
  write?(h: SessionHome, servers: Record<string, unknown>): void;
  /** After the instance closed: the swap served (and what it replaced did not). */
  used(t: Test, home: string): void | Promise<void>;
}

const MEMORY_CATALOGUE = new URL('../../examples/services/memory-catalogue.ts', import.meta.url);
const TOML_SETTINGS = new URL('../../services/settings/toml-service.ts', import.meta.url);

/** The server names with a row in the LMDB catalogue table of `home`. */
const savedInLmdb = (home: string): string[] => new CatalogueStore(path.join(home, 'store')).servers().sort();

const SWAPS: Swap[] = [
  {
    name: 'the built-in services',
    services: {},
    used: (t, home) => {
      t.same(savedInLmdb(home), ['everything', 'gated', 'sdk'], 'the LMDB catalogue saved each discovery');
    },
  },
  {
    name: 'a catalogue kept in memory (examples/services/memory-catalogue.ts)',
    services: { catalogue: { module: MEMORY_CATALOGUE } },
    used: (t, home) => {
      t.same(savedInLmdb(home), [], 'nothing was written to the LMDB catalogue');
    },
  },
  {
    name: 'settings read from extensions.toml (services/settings/toml-service.ts)',
    services: { settings: { module: TOML_SETTINGS } },
    write: (h, servers) => writeFileSync(path.join(h.dir, 'extensions.toml'), stringifyToml({ mcp: { servers } })),
    used: (t, home) => {
      t.notOk(existsSync(path.join(home, 'extensions.json')), 'no extensions.json: the servers came from extensions.toml');
    },
  },
];

const NAME_RULE = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/;
const advertised = (s: AlbedoSession): string[] =>
  s
    .status()
    .filter((x) => x.advertised)
    .map((x) => x.name);
const stateOf = (s: AlbedoSession, name: string): string | undefined => s.status().find((x) => x.name === name)?.state;

for (const swap of SWAPS) {
  t.test(swap.name, async (t) => {
    const tag = newTag();
    const h = sessionHome(t, tag);
    // The held server answers nothing until `gate/open` exists (test/fixtures/gated-server.ts).
    const gate = path.join(h.dir, 'gate');
    mkdirSync(gate);
    const servers = {
      everything: h.stdio(EVERYTHING, ['stdio']),
      sdk: h.stdio(fixture('sdk-server.ts')),
      gated: h.stdio(fixture('gated-server.ts'), [gate]),
    };
    const write = (s: Record<string, unknown>): void => (swap.write ? swap.write(h, s) : h.write(s));
    write(servers);
    writeFileSync(path.join(gate, 'open'), '');
    const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, services: swap.services });

    // A session over the servers: every one dialled, their tools advertised, calls answered.
    const s1 = await albedo.sessions.open();
    t.same(advertised(s1), ['everything', 'sdk', 'gated'], 'every server advertised');
    t.same(
      s1.status().map((x) => x.state),
      ['ready', 'ready', 'ready'],
    );
    const names = s1.tools().map((x) => x.name);
    t.ok(names.length > 10, `${names.length} tools`);
    t.same(
      names.filter((n) => !NAME_RULE.test(n)),
      [],
      "every name matches the providers' rule",
    );
    t.equal(text(await s1.call('everything/echo', { message: 'hi' })), 'Echo: hi', 'a call by server/tool');
    t.equal(text(await s1.call(toolOf(s1, 'sdk', 'echo'), { text: 'by name' })), 'by name', 'a call by advertised name');
    await s1.idle();
    await s1.close();
    t.same(albedo.sessions.list(), [], 'closed');

    // A second session: the held server answers nothing, yet its tools are advertised at once from the saved catalogue.
    rmSync(path.join(gate, 'open'));
    const s2 = await albedo.sessions.open();
    t.equal(stateOf(s2, 'gated'), 'advertised', 'the held server is advertised from its saved catalogue');
    t.same(
      s2.tools().map((x) => x.name),
      names,
      'the same tools, under the same names',
    );
    writeFileSync(path.join(gate, 'open'), '');
    await s2.idle();
    t.equal(stateOf(s2, 'gated'), 'ready', 'its dial finished once the server answered');
    t.equal(text(await s2.call('everything/echo', { message: 'again' })), 'Echo: again');

    // An edit of the settings reaches the open session; an explicit reload keeps it.
    write({ everything: servers.everything, gated: servers.gated });
    await until(() => !advertised(s2).includes('sdk'), 60_000, 'the reload after the edit');
    await s2.reload();
    t.same(advertised(s2), ['everything', 'gated'], 'the removed server left the session');
    t.ok(s2.generation > 1, 'a new generation');

    await s2.close();
    await albedo.close();
    await swap.used(t, h.dir);
  });
}
