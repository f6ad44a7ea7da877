// read_resource's export through the embedding API (issue 25, item 6), over real servers: server-everything's blob
// resources and an SDK server whose blobs have the size a URI asks for (test/fixtures/blob-server.ts). A session
// opened with `cwd` advertises `export` and `file`; an export writes each blob to a new file there and the model
// sees a text naming the path, byte count and type, never the base64. Refused before the read is sent (the server's
// read log stays empty, not run): no working directory, a file outside it (`..`, absolute, through a link), hidden,
// in the home, or already there (left intact). After the read: invalid base64 and a second blob that fails leave no
// file. A working directory in the home, or missing, is refused at open; a restored session keeps its cwd.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AlbedoSession } from '../../api/sessions.ts';
import { closeCatalogueStores } from '../../services/catalogue/store.ts';
import { EVERYTHING, albedoFor, fixture, newTag, rejection, tempDir } from '../helpers.ts';
import { sessionHome, toolOf } from '../fixtures/session-home.ts';
import { blobBytes } from '../fixtures/blob-data.ts';

t.setTimeout(180_000);
t.teardown(closeCatalogueStores);

type Content = { uri: string; mimeType?: string; text?: string; blob?: string };
type Read = { contents: Content[]; _meta?: Record<string, any> };

async function setup(t: Test, opts: { faults?: boolean } = {}) {
  const tag = newTag();
  const h = sessionHome(t, tag);
  const work = tempDir(t, 'export-work-');
  const log = path.join(tempDir(t, 'export-log-'), 'reads');
  writeFileSync(log, '');
  h.write({ blobs: h.stdio(fixture('blob-server.ts'), [log]), everything: h.stdio(EVERYTHING, ['stdio']) });
  const albedo = await albedoFor(t, tag, { home: h.dir, transportWorkers: 1, ...(opts.faults ? { faults: true } : {}) });
  const reads = (): string[] => readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return { albedo, home: h.dir, work, reads };
}

const readOf = (s: AlbedoSession, server: string) => toolOf(s, server);

t.test('a session with a working directory: blobs exported to files, the model sees paths, never base64', async (t) => {
  const { albedo, work, reads } = await setup(t);
  const s = await albedo.sessions.open({ cwd: work });
  t.equal(s.cwd, work);
  const read = readOf(s, 'blobs');
  const def = s.tools().find((x) => x.name === read)!;
  t.match(
    def.inputSchema,
    { properties: { uri: {}, export: { type: 'boolean' }, file: { type: 'string' } } },
    'export and file advertised',
  );

  // server-everything's blob resource: a real server's base64.
  const ev = (await s.call('everything/read_resource', { uri: 'demo://resource/dynamic/blob/7', export: true })) as Read;
  const evFile = path.join(work, 'resource-7.txt');
  t.match(readFileSync(evFile, 'utf8'), /^Resource 7: This is a base64 blob created at /, "server-everything's blob, decoded");
  t.match(ev.contents, [
    { uri: 'demo://resource/dynamic/blob/7', mimeType: 'text/plain', text: new RegExp(`written to the file ${evFile}`) },
  ]);
  t.notOk('blob' in ev.contents[0]!, 'no base64 in the result');
  t.match(ev._meta, { 'albedo/export': [{ index: 0, path: evFile, file: 'resource-7.txt', mimeType: 'text/plain', bytes: Number }] });

  // Five MiB through the model's own name, with a file name: across many 64 KiB batches.
  const n = 5 * 1024 * 1024 + 1;
  const big = (await s.call(read, { uri: `blob://bytes/${n}`, export: true, file: 'big.png' })) as Read;
  t.ok(readFileSync(path.join(work, 'big.png')).equals(blobBytes(n)), 'five MiB, byte for byte');
  t.ok(JSON.stringify(big).length < 2_000, 'the result is a few lines');
  t.match(big.contents[0]!.text, /image\/png, 5,242,881 bytes/);
  t.notOk(big._meta?.['albedo/cut'], 'nothing cut: it fits the budget');

  // base64url in MIME lines; a name taken: the next number.
  await s.call(read, { uri: 'blob://url/1000', export: true });
  await s.call(read, { uri: 'blob://url/1000', export: true });
  t.ok(readFileSync(path.join(work, 'resource-1000.bin')).equals(blobBytes(1000)), 'base64url with line breaks');
  t.ok(readFileSync(path.join(work, 'resource-1000-2.bin')).equals(blobBytes(1000)), 'the second: -2');

  // Two blobs and a text: the text stays, each blob its own file.
  const two = (await s.call(read, { uri: 'blob://two/300', export: true, file: 'pair.png' })) as Read;
  t.ok(readFileSync(path.join(work, 'pair.png')).equals(blobBytes(300, 1)));
  t.ok(readFileSync(path.join(work, 'pair-2.png')).equals(blobBytes(301, 2)));
  t.match(two.contents, [{ text: /pair\.png/ }, { text: 'between the blobs' }, { text: /pair-2\.png/ }]);
  t.same(
    two._meta!['albedo/export'].map((e: any) => [e.index, e.file, e.bytes]),
    [
      [0, 'pair.png', 300],
      [2, 'pair-2.png', 301],
    ],
  );

  // Without export the blob comes back as it did; a text resource with export is returned as it is.
  const plain = (await s.call(read, { uri: 'blob://bytes/10' })) as Read;
  t.equal(plain.contents[0]!.blob, blobBytes(10).toString('base64'), 'no export: the base64');
  const text = (await s.call(read, { uri: 'blob://text/5', export: true })) as Read;
  t.same(text.contents, [{ uri: 'blob://text/5', mimeType: 'text/plain', text: 'xxxxx' }], 'no blob: nothing written');
  t.equal(reads().length, 6, 'every read of the blob server reached it');
});

t.test('refused before the read is sent: no working directory, a bad file, an existing one (left intact)', async (t) => {
  const { albedo, home, work, reads } = await setup(t);
  const plain = await albedo.sessions.open();
  t.equal(plain.cwd, undefined);
  const def = plain.tools().find((x) => x.name === readOf(plain, 'blobs'))!;
  t.notOk((def.inputSchema.properties as Record<string, unknown>).export, 'no working directory: no export advertised');
  t.match(await rejection(plain.call('blobs/read_resource', { uri: 'blob://bytes/10', export: true })), {
    code: 'ALBEDO_INVALID_ARGUMENT',
    outcome: 'not_run',
    data: { export: 'no_working_directory', read: false },
  });

  const s = await albedo.sessions.open({ cwd: work });
  const read = readOf(s, 'blobs');
  writeFileSync(path.join(work, 'taken.png'), 'mine');
  const outside = tempDir(t, 'export-outside-');
  symlinkSync(outside, path.join(work, 'away'));
  symlinkSync(home, path.join(work, 'home-link'));
  mkdirSync(path.join(work, 'sub'));
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['an existing file', { file: 'taken.png' }, 'exists'],
    ['..', { file: '../x.png' }, 'outside'],
    ['.. inside', { file: 'sub/../../x.png' }, 'outside'],
    ['an absolute path', { file: path.join(work, 'x.png') }, 'absolute'],
    ['through a link out of it', { file: 'away/x.png' }, 'outside'],
    ['through a link into the home', { file: 'home-link/x.png' }, 'outside'],
    ['a hidden directory', { file: '.git/hooks/pre-commit' }, 'hidden'],
    ['a hidden file', { file: '.envrc' }, 'hidden'],
    ['a directory that is not there', { file: 'nowhere/x.png' }, 'no_such_directory'],
    ['a trailing slash', { file: 'sub/' }, 'bad_file'],
    ['file with export false', { file: 'x.png', export: false }, 'bad_argument'],
    ['export not a boolean', { export: 'yes' }, 'invalid'],
  ];
  for (const [what, args, reason] of cases) {
    const e = await rejection(s.call(read, { uri: 'blob://bytes/10', export: true, ...args }));
    if (reason === 'invalid') t.match(e, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, `${what}: the schema refuses it`);
    else t.match(e, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run', data: { export: reason, read: false } }, what);
  }
  t.equal(readFileSync(path.join(work, 'taken.png'), 'utf8'), 'mine', 'the existing file is intact');
  t.same(readdirSync(outside), [], 'nothing written outside');
  t.notOk(existsSync(path.join(home, 'x.png')), 'nothing written in the home');
  t.same(reads(), [], 'no read was sent');
  const sub = (await s.call(read, { uri: 'blob://bytes/10', export: true, file: 'sub/ok.png' })) as Read;
  t.match(sub._meta, { 'albedo/export': [{ path: path.join(work, 'sub', 'ok.png'), file: path.join('sub', 'ok.png') }] }, 'a subdirectory');
});

t.test('after the read: invalid base64, and a second blob that fails, leave no file', async (t) => {
  const { albedo, work, reads } = await setup(t);
  const s = await albedo.sessions.open({ cwd: work });
  const read = readOf(s, 'blobs');
  const bad = await rejection(s.call(read, { uri: `blob://bad/${200_000}`, export: true, file: 'bad.png' }));
  t.match(bad, { code: 'ALBEDO_INVALID_RESPONSE', outcome: 'not_run', data: { export: 'invalid_base64', read: true } });
  const half = await rejection(s.call(read, { uri: 'blob://half-bad/1000', export: true }));
  t.match(half, { code: 'ALBEDO_INVALID_RESPONSE', data: { export: 'invalid_base64', read: true } });
  t.same(readdirSync(work), [], 'nothing left: not the partial file, not the first blob of the failed read');
  t.equal(reads().length, 2, 'both reads were sent');
});

t.test('the working directory: refused at open when missing or in the home; kept by a restored session', async (t) => {
  const { albedo, home, work } = await setup(t, { faults: true });
  for (const cwd of ['relative/dir', path.join(work, 'missing'), home, path.join(home, 'store')]) {
    t.match(await rejection(albedo.sessions.open({ cwd })), { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run' }, cwd);
  }
  const s = await albedo.sessions.open({ cwd: work });
  await s.call('blobs/read_resource', { uri: 'blob://bytes/10', export: true, file: 'before.png' });
  // The composer crashes: the session is restored from its record (its options), with its working directory.
  const generation = s.generation;
  const restarted = new Promise<void>((resolve) => {
    const off = albedo.kernel.on('kernel', 'service/restarted', (e) => {
      if (e.service !== 'composer') return;
      off();
      resolve();
    });
  });
  albedo.faults!.crash('composer');
  await restarted;
  // A composer call waits for the restore, and the session's snapshot from the new incarnation comes with it.
  await s.idle();
  t.equal(s.generation, generation, 'the restored session shows what it showed: export still advertised');
  t.ok((s.tools().find((x) => x.name === readOf(s, 'blobs'))!.inputSchema.properties as Record<string, unknown>).export);
  t.equal(s.cwd, work);
  const again = (await s.call('blobs/read_resource', { uri: 'blob://bytes/10', export: true, file: 'after.png' })) as Read;
  t.match(again._meta, { 'albedo/export': [{ file: 'after.png', bytes: 10 }] });
  t.ok(readFileSync(path.join(work, 'after.png')).equals(blobBytes(10)));
});
