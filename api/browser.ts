/**
 * The default way to show a sign-in URL: print it (always) and open the
 * system browser unless ALBEDO_NO_BROWSER is set. The opener (detached, not
 * waited for, no shell on any platform: protocol/opener.ts) is never given
 * the URL — its `state` and PKCE challenge would be readable by every local
 * user in /proc — but the file:// address of a redirect page (0600) in a
 * directory made for it under the system's temporary directory (mkdtemp:
 * 0700, a fresh name, the user's own, whatever the home is or whether there
 * is one). The directory goes when the sign-in no longer needs the handler
 * (`signal`), when the process exits, or on SIGTERM/SIGHUP meanwhile
 * (protocol/pending-files.ts); directories of this user's older than 15
 * minutes (left by a process killed outright) are swept when a new one is made.
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openerCommand, redirectPageHtml } from '../protocol/opener.ts';
import { pendingFile } from '../protocol/pending-files.ts';

const PREFIX = 'albedo-sign-in-';
/** A page directory older than this is a leftover (a process killed by SIGKILL, or one that crashed): a sign-in is shorter. */
const PAGE_TTL_MS = 15 * 60_000;

/**
 * Removes this user's page directories in `tmp` older than PAGE_TTL_MS:
 * only real directories (not links) named `albedo-sign-in-*` that belong to
 * this user; others' are left alone.
 */
function sweep(tmp: string): void {
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const p = path.join(tmp, name);
    try {
      const st = lstatSync(p);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || Date.now() - st.mtimeMs <= PAGE_TTL_MS) continue;
      rmSync(p, { recursive: true, force: true });
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
}

/** A redirect page for `url` in a new private directory; its directory and file, or null (not http(s), or no temp dir). */
function writePage(url: string): { dir: string; file: string } | null {
  const html = redirectPageHtml(url, 'Continue to the sign-in');
  if (html === null) return null;
  try {
    sweep(os.tmpdir());
    const dir = mkdtempSync(path.join(os.tmpdir(), PREFIX));
    const file = path.join(dir, 'sign-in.html');
    writeFileSync(file, html, { mode: 0o600, flag: 'wx' });
    return { dir, file };
  } catch {
    return null;
  }
}

export function openAuthorizationUrl(req: { server: string; url: string; signal?: AbortSignal }): undefined {
  process.stderr.write(`albedo: to sign in to ${req.server}, open this URL in a browser:\n  ${req.url}\n`);
  if (process.env.ALBEDO_NO_BROWSER || req.signal?.aborted) return undefined;
  const page = writePage(req.url);
  if (!page) return undefined;
  // Removed when the sign-in no longer needs it, when the process exits, or on SIGTERM/SIGHUP meanwhile (protocol/pending-files.ts).
  const remove = pendingFile(page.dir);
  req.signal?.addEventListener('abort', remove, { once: true });
  const { file, args } = openerCommand(process.platform, pathToFileURL(page.file).href);
  try {
    const child = spawn(file, args, { stdio: 'ignore', detached: true, shell: false, windowsHide: true });
    child.on('error', () => {});
    child.unref();
  } catch {
    // No opener: the printed URL is enough.
  }
  return undefined;
}
