// Saves that see concurrent edits (issue 20, item 7). A strict save tries
// the server before it writes, which can take twice its startupTimeoutMs;
// an entry edited by hand in extensions.json meanwhile is not overwritten:
// the save is refused (409 ALBEDO_EDIT_CONFLICT, or 412
// ALBEDO_PRECONDITION_FAILED for a write with If-Match) and nothing of it
// is written. And a save whose creds.json half fails puts extensions.json
// back only while it still holds what that save wrote: a hand edit made in
// between stands. The server's start is held by the test (gated-server.ts
// waits for a file), so the edit lands inside the try whatever the
// machine's speed.
import t, { type Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { NODE, fixture, newTag, tempHome, until } from '../helpers.ts';
import { entry, srv, startDaemon, type Daemon, type Reply } from './harness.ts';

t.setTimeout(170_000);

const GATED = fixture('gated-server.ts');

/** A gate for one try of the gated server: `started` once it runs, `open()` lets it answer. */
function gate(t: Test): { dir: string; started: () => boolean; open: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-gate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { dir, started: () => existsSync(path.join(dir, 'started')), open: () => writeFileSync(path.join(dir, 'open'), '') };
}

const gated = (dir: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  entry(NODE, [GATED, dir], { startupTimeoutMs: 120_000, ...extra });

/** extensions.json with `edit` applied to its parsed document, written as an editor would (in place). */
function handEdit(home: string, edit: (doc: any) => void): Buffer {
  const file = path.join(home, 'extensions.json');
  const doc = JSON.parse(readFileSync(file, 'utf8'));
  edit(doc);
  writeFileSync(file, `${JSON.stringify(doc, null, 4)}\n`);
  return readFileSync(file);
}

/** Starts a write, waits for its try to start the gated server, runs `meanwhile`, opens the gate, and returns the answer. */
async function duringTry(g: ReturnType<typeof gate>, write: Promise<Reply>, meanwhile: () => void): Promise<Reply> {
  const early = write.then((r) => {
    throw new Error(`answered before the server started: ${r.status} ${r.text}`);
  });
  await Promise.race([until(g.started, 120_000, 'the try to start the server'), early]);
  early.catch(() => {});
  meanwhile();
  g.open();
  return write;
}

t.test('an entry edited by hand while the save is tried: 409 ALBEDO_EDIT_CONFLICT, the edit intact, nothing written', async (t) => {
  const home = tempHome(t);
  const d: Daemon = await startDaemon(t, home, { tag: newTag() });
  writeFileSync(path.join(home, 'extensions.json'), `${JSON.stringify({ mcp: { servers: {} } }, null, 2)}\n`);

  const g = gate(t);
  let edited!: Buffer;
  const put = await duringTry(
    g,
    d.call('PUT', srv('svc'), { body: { ...gated(g.dir), secrets: { env: { K: 'secret-value-1' } } } }),
    () => {
      edited = handEdit(home, (doc) => {
        doc.mcp.servers.svc = { command: 'hand-edited', enabled: false };
      });
    },
  );
  t.equal(put.status, 409, put.text);
  t.equal(put.body?.error?.code, 'ALBEDO_EDIT_CONFLICT');
  t.equal(put.body?.error?.outcome, 'not_run');
  t.same(readFileSync(path.join(home, 'extensions.json')), edited, 'extensions.json is the hand edit, byte for byte');
  t.notOk(
    existsSync(path.join(home, 'creds.json')) && readFileSync(path.join(home, 'creds.json'), 'utf8').includes('secret-value-1'),
    "the save's secret was not stored",
  );
  await until(async () => (await d.call('GET', srv('svc'))).body?.config?.command === 'hand-edited', 30_000, 'the hand edit in force');

  // Another server's entry edited meanwhile refuses nothing: the save goes through and the other edit stays.
  const g2 = gate(t);
  const ok = await duringTry(g2, d.call('PUT', srv('other'), { body: gated(g2.dir) }), () => {
    edited = handEdit(home, (doc) => {
      doc.mcp.servers.svc.args = ['also', 'by', 'hand'];
    });
  });
  t.equal(ok.status, 201, ok.text);
  const doc = JSON.parse(readFileSync(path.join(home, 'extensions.json'), 'utf8'));
  t.same(doc.mcp.servers.svc, { command: 'hand-edited', enabled: false, args: ['also', 'by', 'hand'] }, "the other entry's edit kept");
  t.ok(doc.mcp.servers.other, 'and the save written');
});

t.test('with If-Match: an edit during the try makes the version stale, 412 ALBEDO_PRECONDITION_FAILED', async (t) => {
  const home = tempHome(t);
  const d = await startDaemon(t, home, { tag: newTag() });
  const g = gate(t);
  t.equal((await d.call('PUT', srv('svc'), { body: gated(g.dir, { enabled: false }) })).status, 201);
  const read = await d.call('GET', srv('svc'));
  const etag = read.headers.etag as string;
  t.ok(etag);

  let edited!: Buffer;
  const enable = await duringTry(g, d.call('PATCH', srv('svc'), { body: { enabled: true }, headers: { 'if-match': etag } }), () => {
    edited = handEdit(home, (doc) => {
      doc.mcp.servers.svc.args.push('--by-hand');
    });
  });
  t.equal(enable.status, 412, enable.text);
  t.equal(enable.body?.error?.code, 'ALBEDO_PRECONDITION_FAILED');
  t.same(readFileSync(path.join(home, 'extensions.json')), edited, 'the hand edit intact');
  t.equal(JSON.parse(edited.toString()).mcp.servers.svc.enabled, false, 'still switched off');
});

t.test('a failed creds.json write puts back extensions.json only while it holds what the save wrote', async (t) => {
  const home = tempHome(t);
  const creds = path.join(home, 'creds.json');
  const d = await startDaemon(t, home, { tag: newTag() });
  const version = (arg: string, secret: string): Record<string, unknown> => ({
    command: 'x',
    args: [arg],
    enabled: false,
    secrets: { env: { K: secret } },
  });
  t.equal((await d.call('PUT', srv('svc'), { body: version('old', 'old-secret-1x') })).status, 201);

  // creds.json's document lock held: the save renames extensions.json in, then waits to write creds.json.
  const release = await lockfile.lock(creds, { lockfilePath: `${creds}.lock`, realpath: false, stale: 30_000, update: 5_000 });
  const put = d.call('PUT', srv('svc'), { body: version('new', 'new-secret-2x') });
  await until(() => readFileSync(path.join(home, 'extensions.json'), 'utf8').includes('"new"'), 60_000, 'extensions.json renamed in');
  // Meanwhile: the entry edited by hand, and creds.json made unreadable, so the save's second half fails.
  const edited = handEdit(home, (doc) => {
    doc.mcp.servers.svc.args = ['by-hand'];
  });
  writeFileSync(creds, '{ not json');
  await release();
  const r = await put;
  t.not(r.status, 200, 'the save failed');
  t.same(readFileSync(path.join(home, 'extensions.json')), edited, 'the hand edit was not overwritten by the bytes read before the save');
});

t.test(
  'a file made invalid JSON by hand while the save is tried: 409 ALBEDO_EDIT_CONFLICT (412 with If-Match), nothing written',
  async (t) => {
    const home = tempHome(t);
    const d = await startDaemon(t, home, { tag: newTag() });
    const file = path.join(home, 'extensions.json');
    const broken = Buffer.from('{ "mcp": { "servers": { "svc": { "command": "half-typed", \n');

    // A new server, no precondition.
    const g = gate(t);
    const put = await duringTry(
      g,
      d.call('PUT', srv('svc'), { body: { ...gated(g.dir), secrets: { env: { K: 'secret-value-3' } } } }),
      () => {
        writeFileSync(file, broken);
      },
    );
    t.equal(put.status, 409, put.text);
    t.equal(put.body?.error?.code, 'ALBEDO_EDIT_CONFLICT');
    t.equal(put.body?.error?.outcome, 'not_run');
    t.same(readFileSync(file), broken, 'the hand edit intact, byte for byte');
    t.notOk(
      existsSync(path.join(home, 'creds.json')) && readFileSync(path.join(home, 'creds.json'), 'utf8').includes('secret-value-3'),
      "the save's secret was not stored",
    );

    // With If-Match: the version is stale, 412.
    writeFileSync(file, `${JSON.stringify({ mcp: { servers: {} } }, null, 2)}\n`);
    const g2 = gate(t);
    await until(async () => (await d.call('GET', '/v1/mcp')).body?.invalid === null, 30_000, 'the fixed file in force');
    t.equal((await d.call('PUT', srv('svc'), { body: gated(g2.dir, { enabled: false }) })).status, 201);
    const etag = (await d.call('GET', srv('svc'))).headers.etag as string;
    t.ok(etag);
    const enable = await duringTry(g2, d.call('PATCH', srv('svc'), { body: { enabled: true }, headers: { 'if-match': etag } }), () => {
      writeFileSync(file, broken);
    });
    t.equal(enable.status, 412, enable.text);
    t.equal(enable.body?.error?.code, 'ALBEDO_PRECONDITION_FAILED');
    t.same(readFileSync(file), broken, 'the hand edit intact');
  },
);
