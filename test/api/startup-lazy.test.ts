// A stdio-only use of the embedding API (createAlbedo, connect, one call)
// loads no HTTP client, no OAuth and no LMDB, in the main thread nor in the
// transport worker, and starts one transport worker (issue 14: start-up).
// Checked on the modules a real run loads: a preload logs each one with the
// thread that loaded it, and worker threads inherit the preload with the
// process's execArgv.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { NODE, ROOT, fixture, newTag, tempHome, waitNoLeftovers } from '../helpers.ts';

t.setTimeout(120_000);

const PRELOAD = `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { isMainThread } from 'node:worker_threads';
const log = process.env.ALBEDO_LOAD_LOG;
const who = isMainThread ? 'main' : 'worker';
if (log) registerHooks({ load(url, context, next) { appendFileSync(log, who + ' ' + url + '\\n'); return next(url, context); } });
`)}`;

/** HTTP (undici, the HTTP links, SSE) and OAuth (its services, jose, oauth4webapi): what only an HTTP server needs. */
const HTTP_OAUTH = /^(node_modules\/(undici|jose|oauth4webapi)\/|services\/oauth\/|services\/transport\/(http-[a-z-]+|sse-reader)\.ts$)/;
/** The era cache's store: only a connection with a state directory needs it. */
const LMDB = /^node_modules\/(lmdb|msgpackr)\//;

interface Run {
  text: string;
  workers: number;
  main: string[];
  worker: string[];
}

/** Runs createAlbedo + connect + echo in a process of its own and returns what each thread loaded (files of the repository). */
function run(t: { teardown(fn: () => unknown): void }, home: string | null): Run {
  const dir = tempHome(t);
  const tag = newTag();
  const log = path.join(dir, 'loaded.txt');
  const driver = path.join(dir, 'driver.mjs');
  const server = { command: NODE, args: [fixture('sdk-server.ts')], env: { ALBEDO_TEST_TAG: tag } };
  writeFileSync(
    driver,
    `
    const { createAlbedo } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'index.ts')).href)});
    const a = await createAlbedo({ home: ${JSON.stringify(home)} });
    const c = await a.connect(${JSON.stringify(server)});
    const r = await c.callTool('echo', { text: 'lazy' });
    const workers = a.kernel.slots('transport').length;
    await a.close();
    console.log(JSON.stringify({ text: r.content[0].text, workers }));
  `,
  );
  const r = spawnSync(NODE, ['--import', PRELOAD, driver], {
    env: { ...process.env, ALBEDO_LOAD_LOG: log },
    encoding: 'utf8',
    timeout: 90_000,
  });
  t.teardown(async () => {
    const left = await waitNoLeftovers(tag);
    if (left.length) throw new Error(`leftover processes: ${left.join(', ')}`);
  });
  if (r.status !== 0) throw new Error(`the driver failed (${r.status}): ${r.stderr}`);
  // node_modules may be a link to another checkout's (its modules load by their real path).
  const prefixes: Array<[string, string]> = [
    [`${pathToFileURL(realpathSync(path.join(ROOT, 'node_modules'))).href}/`, 'node_modules/'],
    [pathToFileURL(ROOT).href.replace(/\/?$/, '/'), ''],
  ];
  const files = (who: string): string[] =>
    readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .flatMap((l) => {
        if (!l.startsWith(`${who} `)) return [];
        const url = l.slice(who.length + 1);
        const hit = prefixes.find(([p]) => url.startsWith(p));
        return hit ? [hit[1] + decodeURIComponent(url.slice(hit[0].length))] : [];
      });
  return { ...JSON.parse(r.stdout.trim().split('\n').pop()!), main: files('main'), worker: files('worker') };
}

t.test('without a state directory: no HTTP, OAuth or LMDB in either thread, and one transport worker', async (t) => {
  const r = run(t, null);
  t.equal(r.text, 'lazy', 'the call was answered');
  t.ok(r.main.includes('api/albedo.ts'), 'the log sees the main thread');
  t.ok(r.worker.includes('services/transport/connection.ts'), 'the log sees the transport worker');
  t.same(
    r.main.filter((f) => HTTP_OAUTH.test(f)),
    [],
    'the main thread loads no HTTP or OAuth module',
  );
  t.same(
    r.worker.filter((f) => HTTP_OAUTH.test(f)),
    [],
    'the transport worker loads no HTTP or OAuth module',
  );
  t.same(
    r.worker.filter((f) => LMDB.test(f)),
    [],
    'the transport worker loads no LMDB',
  );
  t.same(
    r.main.filter((f) => LMDB.test(f)),
    [],
    'the main thread loads no LMDB',
  );
  t.equal(r.workers, 1, 'one connection started one transport worker of the two');
});

t.test('with a state directory the era cache brings LMDB to the transport worker, and still no HTTP or OAuth', async (t) => {
  const r = run(t, tempHome(t));
  t.equal(r.text, 'lazy');
  t.ok(
    r.worker.some((f) => f.startsWith('node_modules/lmdb/')),
    'the era cache is used',
  );
  t.same(
    [...r.main, ...r.worker].filter((f) => HTTP_OAUTH.test(f)),
    [],
    'no HTTP or OAuth module in either thread',
  );
});
