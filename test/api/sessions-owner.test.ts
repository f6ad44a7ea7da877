// Session records outlive the process that wrote them: an instance killed
// with a session open leaves its record, which the next instance under the
// same stable owner (the daemon's) restores — same id, same tools, its servers
// dialled again — while the records of a killed instance with the default,
// per-process owner are pruned and never restored. Real processes, SIGKILL,
// real LMDB, real servers.
import t from 'tap';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { open } from 'lmdb';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { NODE, albedoFor, fixture, newTag, until, waitNoLeftovers } from '../helpers.ts';
import { text } from '../fixtures/composer-ports.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

interface Child {
  id: string;
  tools: string[];
  generation: number;
  loaded: string[];
}

/** Runs the child until it has printed its session, then SIGKILLs it; resolves with what it printed. */
async function openAndKill(home: string, owner: string, extra: string[] = []): Promise<Child> {
  const child = spawn(NODE, [fixture('sessions-child.ts'), home, owner, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the child exited with ${code} before opening its session`)));
  });
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return JSON.parse(line) as Child;
}

/**
 * The keys of the session records table, read straight from LMDB. The environment is closed before the next read
 * opens one: a poll that opened the same path while the last close was still under way aborted the process (SIGABRT,
 * seen in a fresh-clone run).
 */
async function recordKeys(home: string): Promise<string[]> {
  const env = open({ path: path.join(home, 'store'), maxDbs: 16, readOnly: true });
  try {
    return [...env.openDB({ name: 'mcp_sessions' }).getKeys()].map(String);
  } finally {
    await env.close();
  }
}

t.test("a killed instance's session comes back under the same stable owner", async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const before = await openAndKill(h.dir, 'daemon-test');
  t.same(await waitNoLeftovers(tag), [], 'its servers died with it (the launcher saw its lifeline close)');

  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, owner: 'daemon-test' });
  const restored = await albedo.sessions.restored();
  t.equal(restored.length, 1, 'the session was restored');
  const s = restored[0];
  t.equal(s.id, before.id, 'under its id');
  t.same(
    s.tools().map((x) => x.name),
    before.tools,
    'with the same tools',
  );
  t.equal(s.generation, before.generation, 'and generation: nothing changed for the model');
  t.same(
    albedo.sessions.list().map((x) => x.id),
    [before.id],
    'it is listed',
  );
  t.equal(text(await s.call(toolOf(s, 'sdk', 'echo'), { text: 'again' })), 'again', 'its server was dialled again');
  await s.close();
  t.notOk(
    (await recordKeys(h.dir)).some((k) => k.startsWith('daemon-test\n') && !k.endsWith('~ledger')),
    'closing it removed its record',
  );
});

t.test('a killed instance with the default owner: its records are pruned, never restored', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  await openAndKill(h.dir, '');
  t.same(await waitNoLeftovers(tag), []);
  t.ok(
    (await recordKeys(h.dir)).some((k) => k.startsWith('pid:')),
    'the killed process left its record',
  );

  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1 });
  t.same(await albedo.sessions.restored(), [], 'another owner restores nothing');
  const others = async (): Promise<boolean> => (await recordKeys(h.dir)).some((k) => !k.startsWith(`pid:${process.pid}:`));
  await until(async () => !(await others()), 30_000, "the dead owner's rows to be pruned");
  t.pass("the dead owner's records and ledger were pruned");
});

t.test('a restored deferred session keeps what it had loaded: its tools do not shrink within the generation', async (t) => {
  const tag = newTag();
  const h = sessionHome(t, tag);
  h.write({ sdk: h.stdio(fixture('sdk-server.ts')) });
  const before = await openAndKill(h.dir, 'daemon-deferred', [JSON.stringify({ tools: 'deferred' }), 'add two numbers']);
  t.ok(before.loaded.length >= 1, `the search loaded ${before.loaded.join(', ')}`);
  t.equal(before.tools.length, 3 + before.loaded.length);
  await waitNoLeftovers(tag);
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, owner: 'daemon-deferred' });
  const [s] = await albedo.sessions.restored();
  t.equal(s!.generation, before.generation);
  t.same(
    s!.tools().map((x) => x.name),
    before.tools,
    'the same tools, loaded ones included',
  );
  t.same(s!.loaded(), before.loaded);
  s!.search('echo the text back');
  t.same(
    s!
      .tools()
      .map((x) => x.name)
      .slice(0, before.tools.length),
    before.tools,
    'and it grows from there',
  );
});
