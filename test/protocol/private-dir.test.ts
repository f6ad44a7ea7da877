// protocol/private-dir.ts (issue 20, item 5): a private directory is
// checked from the root down — every directory on the way this user's or
// root's and writable by no one else unless sticky (then the entry taken
// from it must be this user's or root's), links on the way this user's or
// root's and followed, the directory itself this user's alone and not a
// link — made a directory at a time (0700), and held: a file opened through
// it after the directory was renamed away and replaced by a link is the
// checked directory's. (Tests run as root: "another user" is uid 65534.)
import t from 'tap';
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { checkPrivatePath, openPrivateDir, PrivateDirError } from '../../protocol/private-dir.ts';
import { tempHome } from '../helpers.ts';

const NOBODY = 65534;
const root = process.getuid?.() === 0;

function reason(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err instanceof PrivateDirError ? err.reason : `not a PrivateDirError: ${String(err)}`;
  }
}

t.test('the way to the directory: writable by others only if sticky, and then only through an entry of ours', async (t) => {
  const base = tempHome(t);
  const mid = path.join(base, 'mid');
  const dir = path.join(mid, 'dir');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  t.equal(checkPrivatePath(dir), undefined, 'ours all the way (/tmp is sticky)');
  chmodSync(mid, 0o777);
  t.type(checkPrivatePath(dir), 'string', 'a parent others may write');
  t.equal(
    reason(() => openPrivateDir(dir)),
    'unsafe',
  );
  chmodSync(mid, 0o1777);
  t.equal(checkPrivatePath(dir), undefined, 'the same, sticky: the entry is ours');
  if (root) {
    chownSync(dir, NOBODY, NOBODY);
    t.type(checkPrivatePath(dir), 'string', "another user's entry in a sticky directory");
    chownSync(dir, 0, 0);
    chmodSync(mid, 0o755);
    chownSync(mid, NOBODY, NOBODY);
    t.type(checkPrivatePath(dir), 'string', "a parent of another user's");
    chownSync(mid, 0, 0);
  }
  chmodSync(dir, 0o770);
  t.type(checkPrivatePath(dir), 'string', 'the directory itself open to its group');
  chmodSync(dir, 0o750);
  t.equal(checkPrivatePath(dir), undefined, 'readable by the group: allowed by default');
  t.type(checkPrivatePath(dir, { forbid: 0o077 }), 'string', 'not when asked for 0700');
});

t.test('links: the directory itself must not be one; one on the way is followed and its target checked', async (t) => {
  const base = tempHome(t);
  const real = path.join(base, 'real');
  mkdirSync(path.join(real, 'dir'), { recursive: true, mode: 0o700 });
  symlinkSync(real, path.join(base, 'via'));
  symlinkSync(path.join(real, 'dir'), path.join(base, 'dir-link'));
  t.equal(checkPrivatePath(path.join(base, 'via', 'dir')), undefined, 'a link on the way, to a safe place');
  t.equal(openPrivateDir(path.join(base, 'via', 'dir')).real, path.join(real, 'dir'));
  t.type(checkPrivatePath(path.join(base, 'dir-link')), 'string', 'the directory a link');
  chmodSync(real, 0o777);
  t.type(checkPrivatePath(path.join(base, 'via', 'dir')), 'string', 'a link on the way to a place others may write');
  chmodSync(real, 0o700);
  if (root) {
    // In a sticky directory others may write, a link is followed only if it is ours or root's: another user's could be re-pointed.
    const sticky = path.join(base, 'sticky');
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    const link = path.join(sticky, 'link');
    symlinkSync(real, link);
    t.equal(checkPrivatePath(path.join(link, 'dir')), undefined, 'a link of ours there');
    lchownSync(link, NOBODY, NOBODY);
    t.type(checkPrivatePath(path.join(link, 'dir')), 'string', "another user's link there");
  }
});

t.test('missing directories: missing unless made, made one at a time with mode 0700', async (t) => {
  const base = tempHome(t);
  const dir = path.join(base, 'a', 'b', 'c');
  t.equal(
    reason(() => openPrivateDir(dir)),
    'missing',
  );
  const d = openPrivateDir(dir, { create: true });
  d.close();
  for (const p of [path.join(base, 'a'), path.join(base, 'a', 'b'), dir]) t.equal(statSync(p).mode & 0o777, 0o700, path.relative(base, p));
  const shared = path.join(base, 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  t.equal(
    reason(() => openPrivateDir(path.join(shared, 'x', 'y'), { create: true })),
    'unsafe',
    'not made under a directory others may write',
  );
});

t.test(
  'held: a directory renamed away and replaced by a link after the check is still the one read',
  { skip: !existsSync('/proc/self/fd') && 'no /proc here' },
  async (t) => {
    const base = tempHome(t);
    const dir = path.join(base, 'home');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(path.join(dir, 'extensions.json'), 'checked');
    const d = openPrivateDir(dir);
    t.teardown(() => d.close());
    renameSync(dir, path.join(base, 'moved'));
    const other = path.join(base, 'other');
    mkdirSync(other, { mode: 0o700 });
    writeFileSync(path.join(other, 'extensions.json'), 'planted');
    symlinkSync(other, dir);
    t.equal(readFileSync(path.join(dir, 'extensions.json'), 'utf8'), 'planted', 'the path now leads elsewhere');
    t.equal(readFileSync(d.file('extensions.json'), 'utf8'), 'checked', 'the held directory does not');
    t.equal(
      reason(() => d.file('../x')),
      'unsafe',
      'only names in it',
    );
  },
);

t.test('a backslash is part of a name on POSIX: the directory checked is the one the path names', { skip: path.sep !== '/' }, async (t) => {
  const base = tempHome(t);
  // `a\b` is open to all; `a/b/home` beside it is ours alone. The path names the first.
  const open = path.join(base, 'a\\b');
  mkdirSync(path.join(open, 'home'), { recursive: true, mode: 0o700 });
  chmodSync(open, 0o777);
  const ours = path.join(base, 'a', 'b', 'home');
  mkdirSync(ours, { recursive: true, mode: 0o700 });
  const home = path.join(open, 'home');
  t.type(checkPrivatePath(home), 'string', 'refused: a directory on the way is open to others');
  t.equal(
    reason(() => openPrivateDir(home)),
    'unsafe',
  );
  t.equal(checkPrivatePath(ours), undefined, 'the lookalike is fine on its own');
});
