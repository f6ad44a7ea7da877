// persistResourceBlob and its decoder (api/export-blob.ts; issue 25, item 6): base64 decoded in 64 KiB input
// batches with the incomplete quartet carried across (MIME line breaks and base64url too), byte for byte what Node
// decodes from the whole string and never more than one batch's bytes at a time; input Node would decode by
// dropping data refused; an existing file left intact (a link or a dangling link there is not followed); every
// failure (invalid base64, a failed write, a full tmpfs, a file size limit, no free descriptor, a cancel) leaves no
// file behind; and a process killed mid-export leaves the target name absent (only its temporary file).
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { BATCH_CHARS, Base64Problem, decodeBatches, persistResourceBlob, writeAll } from '../../api/export-blob.ts';
import { NODE, fixture, rejection, tempDir } from '../helpers.ts';
import { blobBytes, mimeLines } from '../fixtures/blob-data.ts';

t.setTimeout(120_000);

/** Bytes per full batch: 64 KiB of base64 characters. */
const PER_BATCH = (BATCH_CHARS / 4) * 3;

const decodeAll = (s: string, batch?: number): Buffer => Buffer.concat([...decodeBatches(s, batch)]);
const problemOf = (s: string, batch?: number): { why: string; at: number } | undefined => {
  try {
    decodeAll(s, batch);
    return undefined;
  } catch (err) {
    if (!(err instanceof Base64Problem)) throw err;
    return { why: err.why, at: err.at };
  }
};

t.test('64 KiB batches: quartets split across them, MIME lines, base64url, no padding: the bytes Node decodes', async (t) => {
  // Sizes on and around the batch's bytes, so the data's end falls on, just before and just after a batch boundary.
  for (const n of [0, 1, 2, 3, PER_BATCH - 1, PER_BATCH, PER_BATCH + 1, PER_BATCH + 2, 3 * PER_BATCH + 1, 1_000_003]) {
    const bytes = blobBytes(n);
    for (const [form, s] of [
      ['base64', bytes.toString('base64')],
      ['base64url', bytes.toString('base64url')],
      ['MIME lines', mimeLines(bytes.toString('base64'))],
      ['base64url in MIME lines', mimeLines(bytes.toString('base64url'))],
      ['padding, then whitespace', `${bytes.toString('base64')} \n`],
    ] as const) {
      const chunks = [...decodeBatches(s)];
      t.ok(Buffer.concat(chunks).equals(bytes), `${n} bytes as ${form}`);
      t.ok(
        chunks.every((c) => c.length <= PER_BATCH + 3),
        `${n} bytes as ${form}: at most one batch's bytes at a time (largest ${Math.max(0, ...chunks.map((c) => c.length))})`,
      );
    }
  }
  // With MIME lines a batch of 65,536 characters holds 64,691 data characters: every batch ends mid-quartet.
  const lines = mimeLines(blobBytes(4 * PER_BATCH).toString('base64'));
  t.ok(Buffer.concat([...decodeBatches(lines)]).equals(blobBytes(4 * PER_BATCH)), 'mid-quartet at every boundary');
});

t.test('any batch size gives what Node decodes from the whole string', async (t) => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_';
  let x = 7;
  const rand = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  let decoded = 0;
  for (let round = 0; round < 3_000; round++) {
    let s = '';
    for (let i = rand(40); i > 0; i--) s += rand(8) === 0 ? ' \r\n\t'[rand(4)] : alphabet[rand(alphabet.length)];
    s += '='.repeat(rand(3));
    const batch = 1 + rand(9);
    if (problemOf(s, batch)) continue;
    decoded++;
    if (!decodeAll(s, batch).equals(Buffer.from(s, 'base64'))) t.fail(`${JSON.stringify(s)} in batches of ${batch}`);
  }
  t.ok(decoded > 1_000, `${decoded} strings decoded as Node decodes them`);
});

t.test('input Node would decode by dropping data is refused, wherever it is', async (t) => {
  const good = blobBytes(PER_BATCH * 2).toString('base64');
  const cases: Array<[string, string, string, number]> = [
    ['a character of neither alphabet', 'QU*JD', 'character', 2],
    ['a non-ASCII character', 'QUJ\u00e9', 'character', 3],
    ['a non-breaking space', 'QU\u00a0JD', 'character', 2],
    ['data after the padding', 'QQ==QUJD', 'after_padding', 4],
    ['three padding characters', 'QQ===', 'padding', 4],
    ['a quartet of one character', 'QUJDR', 'dangling', 5],
    ['one character and padding', 'QUJDR==', 'dangling', 7],
    ['a bad character in the second batch', `${good}$`, 'character', good.length],
    [
      'data after padding in a later batch',
      `${good.slice(0, -4)}QQ==${' '.repeat(BATCH_CHARS)}QUJD`,
      'after_padding',
      good.length + BATCH_CHARS,
    ],
  ];
  for (const [what, s, why, at] of cases) t.same(problemOf(s), { why, at }, what);
  t.same(decodeAll('QUJD=='), Buffer.from('ABC'), 'padding a whole quartet drops nothing: taken');
  t.same(decodeAll('QUJDRQ'), Buffer.from('ABCE'), 'no padding: taken');
  t.same(decodeAll(' \n '), Buffer.alloc(0), 'whitespace only: no bytes');
});

t.test('a file: written whole, the path and byte count given once it is complete; nothing else left', async (t) => {
  const dir = tempDir(t, 'export-blob-');
  const bytes = blobBytes(3 * PER_BATCH + 5);
  const target = path.join(dir, 'out.bin');
  const p = await persistResourceBlob(mimeLines(bytes.toString('base64')), [target]);
  t.same(p, { path: target, bytes: bytes.length });
  t.ok(readFileSync(target).equals(bytes), 'the bytes');
  t.same(readdirSync(dir), ['out.bin'], 'no temporary file left');
  t.equal(statSync(target).nlink, 1, 'one name');
  const empty = await persistResourceBlob('', [path.join(dir, 'empty.bin')]);
  t.same(empty.bytes, 0, 'an empty blob: an empty file');
});

t.test('an existing file is left intact; a link there is not followed; the next free name is taken', async (t) => {
  const dir = tempDir(t, 'export-exists-');
  const target = path.join(dir, 'a.png');
  writeFileSync(target, 'mine');
  const b64 = blobBytes(PER_BATCH + 7).toString('base64');
  const e = await rejection(persistResourceBlob(b64, [target]));
  t.match(e, { code: 'ALBEDO_INVALID_ARGUMENT', outcome: 'not_run', data: { export: 'exists', file: target, read: true } });
  t.equal(readFileSync(target, 'utf8'), 'mine', 'intact');
  t.same(readdirSync(dir), ['a.png'], 'nothing else left');

  // A dangling link at the name: never followed, so the file it points to is not created.
  const pointed = path.join(dir, 'pointed');
  symlinkSync(pointed, path.join(dir, 'link.png'));
  t.match(await rejection(persistResourceBlob(b64, [path.join(dir, 'link.png')])), { data: { export: 'exists' } });
  t.notOk(existsSync(pointed), 'the link was not followed');
  t.ok(lstatSync(path.join(dir, 'link.png')).isSymbolicLink());

  const second = path.join(dir, 'a-2.png');
  const p = await persistResourceBlob(b64, [target, second]);
  t.equal(p.path, second, 'the next name');
  t.equal(readFileSync(target, 'utf8'), 'mine');
});

t.test('failures remove the partial file: invalid base64 late, a failed write, a cancel; also without hard links', async (t) => {
  const top = tempDir(t, 'export-fail-');
  const good = blobBytes(3 * PER_BATCH).toString('base64');
  for (const noLinks of [false, true]) {
    const dir = path.join(top, noLinks ? 'no-links' : 'links');
    mkdirSync(dir);
    const target = path.join(dir, 't.bin');
    let wrote = 0;
    const counting = async (fh: Parameters<typeof writeAll>[0], b: Buffer) => {
      wrote += b.length;
      await writeAll(fh, b);
    };
    const bad = await rejection(persistResourceBlob(`${good}%AAAA`, [target], { noLinks, write: counting }));
    t.match(bad, { code: 'ALBEDO_INVALID_RESPONSE', outcome: 'not_run', data: { export: 'invalid_base64', why: 'character', read: true } });
    t.ok(wrote >= 2 * PER_BATCH, `the bad character came after ${wrote} bytes were written`);
    t.same(readdirSync(dir), [], `${noLinks ? 'no links' : 'links'}: no file left after invalid base64`);

    let n = 0;
    const full = async (fh: Parameters<typeof writeAll>[0], b: Buffer) => {
      if (++n === 3) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      await writeAll(fh, b);
    };
    const nospc = await rejection(persistResourceBlob(good, [target], { noLinks, write: full }));
    t.match(nospc, { code: 'ALBEDO_EXPORT_FAILED', outcome: 'not_run', data: { export: 'write_failed', errno: 'ENOSPC', read: true } });
    t.same(readdirSync(dir), [], 'no file left after a failed write');

    const ac = new AbortController();
    let m = 0;
    const cancelling = async (fh: Parameters<typeof writeAll>[0], b: Buffer) => {
      if (++m === 2) ac.abort();
      await writeAll(fh, b);
    };
    const cancelled = await rejection(persistResourceBlob(good, [target], { noLinks, write: cancelling, signal: ac.signal }));
    t.match(cancelled, { code: 'ALBEDO_DEADLINE', outcome: 'not_run', data: { export: 'aborted' } });
    t.same(readdirSync(dir), [], 'no file left after a cancel');

    const ok = await persistResourceBlob(good, [target], { noLinks });
    t.ok(readFileSync(ok.path).equals(blobBytes(3 * PER_BATCH)), `${noLinks ? 'no links' : 'links'}: then it works`);
  }
  const missing = await rejection(persistResourceBlob(good, [path.join(top, 'no-such-dir', 'x.bin')]));
  t.match(missing, { code: 'ALBEDO_EXPORT_FAILED', data: { errno: 'ENOENT' } }, 'a directory that is not there');
});

/** Runs test/fixtures/export-child.ts; with `shell`, after those commands (limits, a mount); `ns`: in a mount namespace of its own. */
function child(o: Record<string, unknown>, shell?: string, ns = false) {
  const args = [fixture('export-child.ts'), JSON.stringify(o)];
  if (shell === undefined) return spawn(NODE, args);
  // Without tap's preload (it puts it back into any child's environment): its exit hooks catch SIGXFSZ, which the
  // child must ignore to see EFBIG.
  const script = `${shell}; unset NODE_OPTIONS; exec ${[NODE, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}`;
  return ns ? spawn('unshare', ['-m', 'sh', '-c', script]) : spawn('sh', ['-c', script]);
}

async function outcome(c: ReturnType<typeof spawn>): Promise<Record<string, any>> {
  let last = '';
  for await (const line of createInterface({ input: c.stdout! })) last = line;
  return JSON.parse(last) as Record<string, any>;
}

t.test('a file size limit (RLIMIT_FSIZE: EFBIG mid-export) and no free descriptor (EMFILE): nothing left', async (t) => {
  const dir = tempDir(t, 'export-limits-');
  // 256 blocks (128 or 256 KiB, as the shell counts them) under a 1 MiB export; SIGXFSZ ignored, so the write fails.
  const big = await outcome(child({ dir, name: 'big.bin', bytes: 1024 * 1024 }, "trap '' XFSZ; ulimit -f 256"));
  t.match(big, { ok: false, code: 'ALBEDO_EXPORT_FAILED', outcome: 'not_run', data: { errno: 'EFBIG', read: true } });
  t.same(big.files, [], 'the partial file was removed');
  const fds = await outcome(child({ dir, name: 'fds.bin', bytes: 1000, fillFds: true }, 'ulimit -n 64'));
  t.match(fds, { ok: false, code: 'ALBEDO_EXPORT_FAILED', data: { errno: 'EMFILE' } });
  t.same(fds.files, [], 'nothing created');
  const fine = await outcome(child({ dir, name: 'fine.bin', bytes: 100_000 }, "trap '' XFSZ; ulimit -f 256"));
  t.match(fine, { ok: true, bytes: 100_000 }, 'under the limit it works');
});

// A real full disk: a 256 KiB tmpfs, mounted in a mount namespace of the child's own (gone when it exits), which
// needs root or unprivileged user namespaces.
const canMount = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt']).status === 0;
t.test(
  'a full disk (a small tmpfs): ENOSPC, the partial file removed',
  { skip: canMount ? false : 'cannot mount a tmpfs here' },
  async (t) => {
    const dir = tempDir(t, 'export-tmpfs-');
    const mount = `mount -t tmpfs -o size=256k tmpfs '${dir}'`;
    const full = await outcome(child({ dir, name: 'big.bin', bytes: 1024 * 1024 }, mount, true));
    t.match(full, { ok: false, code: 'ALBEDO_EXPORT_FAILED', outcome: 'not_run', data: { errno: 'ENOSPC', read: true } });
    t.same(full.files, [], 'the partial file was removed');
    const fits = await outcome(child({ dir, name: 'small.bin', bytes: 100_000 }, mount, true));
    t.match(fits, { ok: true, bytes: 100_000, files: ['small.bin'] }, 'what fits is written');
  },
);

t.test('a process killed mid-export: the target name is absent, only the temporary file stays', async (t) => {
  const dir = tempDir(t, 'export-kill-');
  const c = child({ dir, name: 'picture.png', bytes: 4 * 1024 * 1024, stall: 10 });
  const lines = createInterface({ input: c.stdout! });
  for await (const line of lines) if (line === 'stalled') break;
  const exited = new Promise((resolve) => c.once('exit', resolve));
  c.kill('SIGKILL');
  await exited;
  const left = readdirSync(dir);
  t.notOk(left.includes('picture.png'), 'the name was never published');
  t.equal(left.length, 1);
  t.match(left[0], /^\.albedo-export-\d+-[0-9a-f]{12}\.part$/, 'the temporary file, hidden');
  const partial = statSync(path.join(dir, left[0]!)).size;
  t.ok(partial > 0 && partial < 4 * 1024 * 1024, `partial: ${partial} bytes`);
  const fresh = await outcome(child({ dir, name: 'other.bin', bytes: 10 }));
  t.same(fresh.files, [left[0], 'other.bin'], 'a dead export written to a moment ago is not swept yet');

  // A minute later: the next process's first export into the directory removes it; a live process's stays.
  const old = new Date(Date.now() - 5 * 60_000);
  utimesSync(path.join(dir, left[0]!), old, old);
  const live = `.albedo-export-${process.pid}-0123456789ab.part`;
  writeFileSync(path.join(dir, live), 'x');
  utimesSync(path.join(dir, live), old, old);
  writeFileSync(path.join(dir, '.albedo-export-other.part'), 'not an export name');
  const again = await outcome(child({ dir, name: 'picture.png', bytes: 4 * 1024 * 1024 }));
  t.match(again, { ok: true, bytes: 4 * 1024 * 1024 }, 'a later export of the same name works');
  t.ok(readFileSync(path.join(dir, 'picture.png')).equals(blobBytes(4 * 1024 * 1024)));
  t.same(
    again.files,
    [live, '.albedo-export-other.part', 'other.bin', 'picture.png'].sort(),
    "the dead export's temporary file was swept; a live process's and another name were not",
  );
});
