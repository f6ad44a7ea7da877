/**
 * The default way to show a sign-in URL: print it (always) and open the
 * system browser unless ALBEDO_NO_BROWSER is set. The opener (detached, not
 * waited for, no shell on any platform: protocol/opener.ts) is never given
 * the URL — its `state` and PKCE challenge would be readable by every local
 * user in /proc — but the file:// address of a redirect page (0600) in a
 * directory made for it under the system's temporary directory (mkdtemp:
 * 0700, a fresh name, the user's own, whatever the home is or whether there
 * is one). The directory goes when the sign-in no longer needs the handler
 * (`signal`), or when the process exits.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openerCommand, redirectPageHtml } from '../protocol/opener.ts';

/** Page directories to remove when the process exits. */
const leftovers = new Set<string>();
let hooked = false;

/** A redirect page for `url` in a new private directory; its directory and file, or null (not http(s), or no temp dir). */
function writePage(url: string): { dir: string; file: string } | null {
  const html = redirectPageHtml(url, 'Continue to the sign-in');
  if (html === null) return null;
  try {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'albedo-sign-in-'));
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
  const remove = (): void => {
    leftovers.delete(page.dir);
    rmSync(page.dir, { recursive: true, force: true });
  };
  leftovers.add(page.dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => { for (const d of leftovers) rmSync(d, { recursive: true, force: true }); });
  }
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
