// platform/atomic-file.ts on real files: the one atomic replace every file of
// Albedo's goes through (extensions.json, creds.json, the write journal,
// daemon.json, daemon.lock).
import t from 'tap';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { removeFileDurably, writeFileAtomic } from '../../platform/atomic-file.ts';

function dir(t: { teardown(fn: () => unknown): void }): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'albedo-platform-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const temps = (d: string): string[] => readdirSync(d).filter((f) => f.endsWith('.tmp'));

t.test('a new file: its content, mode 0600 by default, no temporary file left', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'a.json');
  writeFileAtomic(file, '{"a":1}\n');
  t.equal(readFileSync(file, 'utf8'), '{"a":1}\n');
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.same(temps(d), []);
  writeFileAtomic(file, Buffer.from('bytes'));
  t.equal(readFileSync(file, 'utf8'), 'bytes', 'a Buffer is written as given');
});

t.test('a replaced file keeps its mode unless one is given', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'a.json');
  writeFileSync(file, 'old');
  chmodSync(file, 0o640);
  writeFileAtomic(file, 'new');
  t.equal(statSync(file).mode & 0o777, 0o640, 'the mode of the file it replaced');
  writeFileAtomic(file, 'newer', { mode: 0o600 });
  t.equal(statSync(file).mode & 0o777, 0o600, 'the mode given');
  t.equal(readFileSync(file, 'utf8'), 'newer');
});

t.test('a write that fails before its rename leaves the file as it was and no temporary file', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'a.json');
  writeFileAtomic(file, 'old');
  const boom = new Error('cut here');
  t.throws(() => writeFileAtomic(file, 'new', { beforeRename: () => throwIt(boom) }), boom);
  t.equal(readFileSync(file, 'utf8'), 'old');
  t.same(temps(d), []);
  t.same(readdirSync(d), ['a.json']);
});

function throwIt(err: Error): never {
  throw err;
}

t.test("nothing is written through a link: neither one planted at a guessable temporary name nor the file's own", async (t) => {
  const d = dir(t);
  const aside = dir(t);
  const victim = path.join(aside, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  const file = path.join(d, 'daemon.lock');
  // The names the daemon's own copies used: `<file>.<pid>.tmp`.
  symlinkSync(victim, `${file}.${process.pid}.tmp`);
  symlinkSync(victim, path.join(d, `.daemon.lock.${process.pid}.tmp`));
  writeFileAtomic(file, 'mine\n');
  t.equal(readFileSync(victim, 'utf8'), 'precious\n', "the links' target is untouched");
  t.ok(lstatSync(file).isFile(), 'a regular file');
  // The file itself a link: the rename replaces the link, not what it points to.
  rmSync(file);
  symlinkSync(victim, file);
  writeFileAtomic(file, 'mine again\n');
  t.ok(lstatSync(file).isFile(), 'the link was replaced by a file');
  t.equal(readFileSync(victim, 'utf8'), 'precious\n');
});

t.test('a missing directory is made, 0700', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'deep', 'er', 'creds.json');
  writeFileAtomic(file, '{}');
  t.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
  t.equal(readFileSync(file, 'utf8'), '{}');
});

t.test('removeFileDurably removes a file, and an absent one is no error', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'j.json');
  writeFileAtomic(file, '{}');
  removeFileDurably(file);
  t.notOk(existsSync(file));
  t.doesNotThrow(() => removeFileDurably(file));
  mkdirSync(path.join(d, 'sub'));
  t.throws(() => removeFileDurably(path.join(d, 'sub')), 'another failure (here: a directory) is thrown');
});

t.test('a write the system cuts short (a file size limit, a full disk) fails and leaves the file as it was', async (t) => {
  const d = dir(t);
  const file = path.join(d, 'creds.json');
  writeFileAtomic(file, 'old\n');
  // write(2) near a limit writes what fits and says so, then fails (EFBIG, ENOSPC): a writer that does not
  // look at the count renames a part of the file into place. `ulimit -f 16`: 8 or 16 KiB (512- or 1024-byte blocks).
  const atomic = pathToFileURL(path.join(import.meta.dirname, '..', '..', 'platform', 'atomic-file.ts')).href;
  const script = `
    const { writeFileAtomic } = await import(${JSON.stringify(atomic)});
    try { writeFileAtomic(${JSON.stringify(file)}, 'x'.repeat(100_000)); console.log('wrote'); }
    catch (err) { console.log(err.code); }
  `;
  const r = spawnSync('/bin/sh', ['-c', 'ulimit -f 16 && exec "$0" --input-type=module -e "$1"', process.execPath, script], {
    encoding: 'utf8',
  });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout.trim(), 'EFBIG', 'the write fails');
  t.equal(readFileSync(file, 'utf8'), 'old\n', 'the file as it was, not a part of the new one');
  t.same(temps(d), [], 'no temporary file left');
});

t.test("a temporary file a killed writer left is removed by a later write; a live writer's and a fresh one stay", async (t) => {
  const d = dir(t);
  const file = path.join(d, 'creds.json');
  writeFileAtomic(file, '{}\n');
  // A writer killed between its temporary file's fsync and the rename (the OOM killer, a power cut): the copy stays.
  const atomic = pathToFileURL(path.join(import.meta.dirname, '..', '..', 'platform', 'atomic-file.ts')).href;
  const script = `
    const { writeFileAtomic } = await import(${JSON.stringify(atomic)});
    writeFileAtomic(${JSON.stringify(file)}, '{"token":"secret"}\\n', { beforeRename: () => process.kill(process.pid, 'SIGKILL') });
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.signal, 'SIGKILL', r.stderr);
  const [left] = temps(d);
  t.match(left, new RegExp(`^\\.creds\\.json\\.${r.pid}\\.[0-9a-f]{8}\\.tmp$`), "the killed writer's temporary file");
  t.equal(readFileSync(path.join(d, left!), 'utf8'), '{"token":"secret"}\n');
  const old = new Date(Date.now() - 10 * 60_000);
  utimesSync(path.join(d, left!), old, old);
  // A live process's (its writer may be slow) and one just made (its pid may be another namespace's) are not touched.
  const live = `.creds.json.${process.ppid}.0123abcd.tmp`;
  writeFileSync(path.join(d, live), 'live');
  utimesSync(path.join(d, live), old, old);
  const fresh = `.creds.json.${r.pid}.89abcdef.tmp`;
  writeFileSync(path.join(d, fresh), 'fresh');
  const otherFile = `.daemon.json.${r.pid}.0123abcd.tmp`;
  writeFileSync(path.join(d, otherFile), 'another file');
  utimesSync(path.join(d, otherFile), old, old);
  writeFileAtomic(file, '{}\n');
  t.same(temps(d).sort(), [otherFile, live, fresh].sort(), "the killed writer's copy is gone; the others stay");
});
