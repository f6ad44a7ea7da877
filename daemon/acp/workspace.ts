/**
 * An editor's workspace (`cwd`) may not be the daemon's home or inside it: the
 * editor's servers run there, beside daemon.json and creds.json. Both paths are
 * compared resolved (symlinks and `..`, as the kernel follows them); a part
 * that does not exist yet is taken as written after its existing parent. A
 * workspace that holds the home (the user's home folder) is allowed.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';

/** `p` with every symlink and `..` resolved, as far as it exists; the rest appended. */
export function resolvedPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    const parent = path.dirname(p);
    if (parent === p) return p;
    return path.resolve(resolvedPath(parent), path.basename(p));
  }
}

/** Whether `cwd` is `home` or inside it, both resolved. */
export function insideHome(cwd: string, home: string): boolean {
  const rel = path.relative(resolvedPath(home), resolvedPath(cwd));
  return rel === '' || !(rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel));
}
