/**
 * Where a stdio server runs, kept away from $ALBEDO_HOME (issue 20, item 4).
 * The home holds daemon.json (the API's bearer token) and creds.json: a
 * server whose working directory is the home — or an ancestor of it —
 * serves them to the model as soon as it serves "." (`server-filesystem .`).
 *
 * - A server saved without `cwd` runs in a directory of its own,
 *   `<base>/<name>-<digest>`, the digest over the home and the name (two
 *   homes never share one). `<base>` is the first of these that passes the
 *   home's check (protocol/private-dir.ts: every directory on the way this
 *   user's or root's, missing ones made 0700) and is neither in nor above
 *   the home: `$XDG_RUNTIME_DIR/albedo/cwd` (when set and absolute),
 *   `<tmp>/albedo-<uid>/cwd` (`<tmp>` the daemon's temporary directory),
 *   `$XDG_CACHE_HOME/albedo/cwd` (else `~/.cache/albedo/cwd`). Another user
 *   who plants `<tmp>/albedo-<uid>` in a shared /tmp only moves the server
 *   on to the next; the last lies in the user's own home, where no one
 *   else can make it.
 * - A configured `cwd`, or an argument that resolves (against the working
 *   directory) to the home, into it or to a directory above it, is kept but
 *   warned about (`exposureWarnings`).
 */
import { createHash } from 'node:crypto';
import { closeSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openPrivateDir } from '../../protocol/private-dir.ts';

/** A warning about a server's entry: the field it is about, and what is wrong (no value but paths). */
export interface EntryWarning {
  path: Array<string | number>;
  message: string;
}

/** `p` and, when it exists, its real path (symbolic links followed). */
function forms(p: string): string[] {
  const out = [path.resolve(p)];
  try {
    const real = realpathSync.native(p);
    if (real !== out[0]) out.push(real);
  } catch {
    // Not there (yet): the lexical form only.
  }
  return out;
}

const within = (p: string, dir: string): boolean => {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** How `p` stands to `home`: the home or inside it, a directory above it (holding it), or neither. */
export function relationTo(p: string, home: string): 'inside' | 'holds' | null {
  const ps = forms(p);
  const hs = forms(home);
  if (ps.some((a) => hs.some((h) => within(a, h)))) return 'inside';
  if (ps.some((a) => hs.some((h) => within(h, a)))) return 'holds';
  return null;
}

/** A readable, safe file name for server `name` in `home`: its plain characters, then a digest of both. */
function leafOf(home: string, name: string): string {
  const plain = name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
  const digest = createHash('sha256')
    .update(`${path.resolve(home)}\0${name}`)
    .digest('hex')
    .slice(0, 12);
  return `${plain || 'server'}-${digest}`;
}

/** Where the neutral directories may lie, in the order they are tried (see the module's comment). */
export function neutralBases(): string[] {
  const uid = process.getuid?.();
  const out: string[] = [];
  const runtime = process.env.XDG_RUNTIME_DIR;
  if (runtime && path.isAbsolute(runtime)) out.push(path.join(runtime, 'albedo', 'cwd'));
  out.push(path.join(os.tmpdir(), uid === undefined ? 'albedo' : `albedo-${uid}`, 'cwd'));
  let home = '';
  try {
    home = os.homedir();
  } catch {
    /* no home directory */
  }
  const cache = process.env.XDG_CACHE_HOME || (home ? path.join(home, '.cache') : '');
  if (cache && path.isAbsolute(cache)) out.push(path.join(cache, 'albedo', 'cwd'));
  return out;
}

/**
 * The working directory of server `name` of `home` saved without one: the
 * first candidate (`neutralBases`) that is this user's alone and neither in
 * nor above the home, made (0700) when missing. Throws an Error saying why
 * each was refused when none can be used.
 */
export function neutralCwd(home: string, name: string): string {
  const why: string[] = [];
  for (const base of neutralBases()) {
    const dir = path.join(base, leafOf(home, name));
    if (relationTo(dir, home) !== null) {
      why.push(`${dir} would lie in or above $ALBEDO_HOME (${home})`);
      continue;
    }
    try {
      // Checked from the root down as the home is (protocol/private-dir.ts): an `albedo-<uid>` another user planted in a
      // shared /tmp, or a link there, is refused; missing directories are made one at a time, 0700.
      const held = openPrivateDir(dir, { create: true, forbid: 0o077 });
      closeSync(held.fd);
      // Made in a place that resolves into the home after all (a link): not used.
      if (relationTo(held.real, home) !== null) {
        why.push(`${held.real} lies in or above $ALBEDO_HOME (${home})`);
        continue;
      }
      return held.real;
    } catch (err) {
      why.push((err as Error).message);
    }
  }
  throw new Error(`${why.join('; ')}; give the server a cwd`);
}

/** The words of `arg` that may be paths: the argument, or the value of `--flag=value`. */
function pathOf(arg: string): string | null {
  if (!arg) return null;
  if (!arg.startsWith('-')) return arg;
  const eq = arg.indexOf('=');
  return eq > 0 && eq < arg.length - 1 ? arg.slice(eq + 1) : null;
}

/**
 * What a stdio server's working directory and arguments expose of `home`:
 * a warning for the cwd when it is the home, inside it or above it, and one
 * for each argument that resolves there (relative ones against `cwd`; when
 * the cwd is already inside the home, only absolute ones are looked at).
 */
export function exposureWarnings(home: string, cwd: string, args: readonly string[]): EntryWarning[] {
  const out: EntryWarning[] = [];
  const where = relationTo(cwd, home);
  if (where === 'inside') {
    const is = path.resolve(cwd) === path.resolve(home) ? 'is' : 'is in';
    out.push({
      path: ['cwd'],
      message:
        `the working directory ${cwd} ${is} $ALBEDO_HOME (${home}), beside daemon.json and creds.json: ` +
        "a server that serves its working directory hands out the daemon's token; give it a cwd outside the home",
    });
  } else if (where === 'holds') {
    out.push({
      path: ['cwd'],
      message:
        `the working directory ${cwd} holds $ALBEDO_HOME (${home}), with daemon.json and creds.json: ` +
        "a server that serves its working directory hands out the daemon's token; give it a cwd that does not hold the home",
    });
  }
  args.forEach((arg, i) => {
    const p = pathOf(arg);
    if (p === null || (where === 'inside' && !path.isAbsolute(p))) return;
    const r = relationTo(path.resolve(cwd, p), home);
    if (r === null) return;
    const what = r === 'inside' ? `is in $ALBEDO_HOME (${home})` : `holds $ALBEDO_HOME (${home})`;
    out.push({
      path: ['args', i],
      message:
        `the argument ${JSON.stringify(arg)} names ${path.resolve(cwd, p)}, which ${what}: ` +
        'a server given it as a directory to serve hands out daemon.json and creds.json',
    });
  });
  return out;
}
