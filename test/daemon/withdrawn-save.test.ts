// A save whose client goes away while its server is tried writes nothing
// (issue 26: Ctrl-C during `albedo mcp add` on the progress line). The
// daemon sees the connection close (the request's signal), gives up the
// try and does not commit — neither when the server would have started,
// nor for a removal that was waiting behind it. A save that comes after
// finds nothing of it. Through the API (an aborted request) and through
// the real CLI (SIGINT while it waits).
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { NODE, ROOT, fixture, newTag, tempHome, until } from '../helpers.ts';
import { BIN, entry, srv, startDaemon } from './harness.ts';

t.setTimeout(170_000);

const GATED = fixture('gated-server.ts');

function gate(t: { teardown(fn: () => unknown): void }): { dir: string; started: () => boolean; open: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-gate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, started: () => existsSync(path.join(dir, 'started')), open: () => writeFileSync(path.join(dir, 'open'), '') };
}

t.test('an aborted PUT writes nothing, even once its server starts', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const g = gate(t);
  const body = entry(NODE, [GATED, g.dir], { startupTimeoutMs: 120_000 });
  const controller = new AbortController();
  const put = request(`http://127.0.0.1:${d.info.port}${srv('slow')}`, {
    method: 'PUT',
    body: JSON.stringify(body),
    signal: controller.signal,
    headers: { authorization: `Bearer ${d.info.token}`, 'content-type': 'application/json' },
  });
  put.catch(() => {});
  await until(g.started, 120_000, 'the try to start the server');
  controller.abort();
  await t.rejects(put, 'the client gave up');
  g.open();
  // A later save of the same server runs after the withdrawn one has ended (one server's writes run one at a time).
  const after = await d.call('PUT', srv('slow'), { body: { ...body, enabled: false } });
  t.equal(after.status, 201, `it finds no server of that name: created (${after.text})`);
  t.equal(after.body?.created, true);
  const doc = JSON.parse(readFileSync(path.join(home, 'extensions.json'), 'utf8'));
  t.equal(doc.mcp.servers.slow.enabled, false, 'what is written is the later save');
});

t.test('SIGINT on albedo mcp add while its server is tried: nothing is saved', async (t) => {
  const home = tempHome(t);
  const tag = newTag();
  const d = await startDaemon(t, home, { tag });
  const g = gate(t);
  const cli = spawn(NODE, [BIN, 'mcp', 'add', 'slow', '--startup-timeout', '120000', '--', NODE, GATED, g.dir], {
    cwd: ROOT,
    env: { ...process.env, ALBEDO_HOME: home, TEST_SERVER_TAG: tag },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string>((resolve) => cli.once('exit', (code, sig) => resolve(code ?? sig!)));
  await until(g.started, 120_000, 'the try to start the server');
  cli.kill('SIGINT');
  t.not(await exited, 0, 'the command ended by the interrupt');
  g.open();
  const after = await d.call('PUT', srv('slow'), { body: entry(NODE, ['-e', '0'], { enabled: false }) });
  t.equal(after.status, 201, after.text);
  t.equal(after.body?.created, true, 'the interrupted add left nothing');
});
