// The project's own files, as git knows them: tracked, and new ones not
// ignored (a file about to be committed is checked before it is). Shared by
// the checks over the whole tree (citations, line width).
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers.ts';

/** Paths relative to the repository's root, with `/`, of the files whose names end with one of `exts` (`.ts`, `.md`…). */
export function projectFiles(exts: readonly string[]): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return [...new Set(out.split('\0'))].filter((f) => {
    if (!f || !exts.some((e) => f.endsWith(e))) return false;
    // A file deleted in the work tree but still in the index is not there to read.
    const abs = path.join(ROOT, f);
    return existsSync(abs) && statSync(abs).isFile();
  });
}
