/**
 * The desktop's URL opener (`xdg-open`, `open`, `rundll32
 * url.dll,FileProtocolHandler`), for `albedo open`, `albedo mcp sign-in
 * --open` and the `/mcp` screen's sign-in: started detached, no shell,
 * never waited for. It is never given the URL (a login code, an
 * authorization request's `state` and PKCE challenge: an argument vector is
 * readable by every local user in /proc) but the file:// address of a page
 * of the user's own that sends the browser on to it
 * (`$ALBEDO_HOME/ui-open/<random>.html`, 0600, in a 0700 directory of the
 * home, which the CLI checks is private). It says nothing itself: each
 * caller tells the user in its own way.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openerCommand, redirectPageHtml } from '../../protocol/opener.ts';
import { pendingFile } from '../../protocol/pending-files.ts';

/** The opener of this platform (for messages). */
export const OPENER = openerCommand(process.platform, 'file:///').file;

/** How long a page is kept at most: a login link's life (a sign-in's is shorter). */
const PAGE_TTL_MS = 15 * 60_000;

/** Writes the redirect page for `url` under `home` (older pages removed); null for a URL that is not http(s). */
function writePage(home: string, url: string, text: string): string | null {
  const html = redirectPageHtml(url, text);
  if (html === null) return null;
  const dir = path.join(home, 'ui-open');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const f of readdirSync(dir)) {
    const p = path.join(dir, f);
    try {
      if (Date.now() - statSync(p).mtimeMs > PAGE_TTL_MS) rmSync(p, { force: true });
    } catch {
      /* gone meanwhile */
    }
  }
  const file = path.join(dir, `${randomBytes(12).toString('hex')}.html`);
  writeFileSync(file, html, { mode: 0o600, flag: 'wx' });
  return file;
}

/** Starts the opener on a page's file:// address; resolves with whether it started. */
function startOpener(target: string): Promise<boolean> {
  const { file, args } = openerCommand(process.platform, target);
  return new Promise((resolve) => {
    try {
      const child = spawn(file, args, { detached: true, stdio: 'ignore', shell: false, windowsHide: true });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}

export interface Opened {
  /** Whether the opener started. */
  opened: boolean;
  /** Removes the page now (the sign-in it served is over); harmless when gone. */
  remove(): void;
}

/**
 * Opens `url` through a redirect page in `home`. `keep`: the page outlives
 * this process (`albedo open` exits at once; the browser reads it later,
 * and the next `albedo open` removes it after 15 minutes); otherwise it is
 * removed by `remove()`, when this process exits, or on SIGTERM/SIGHUP
 * while it is pending (protocol/pending-files.ts).
 */
export async function openBrowser(home: string, url: string, o: { text?: string; keep?: boolean } = {}): Promise<Opened> {
  let page: string | null = null;
  try {
    page = writePage(home, url, o.text ?? 'Continue');
  } catch {
    // A home that cannot hold the page: nothing is opened (the caller has shown the URL).
  }
  if (!page) return { opened: false, remove: () => undefined };
  // Removed by remove(), when this process exits, or on SIGTERM/SIGHUP while pending (protocol/pending-files.ts).
  const remove = o.keep ? () => rmSync(page, { force: true }) : pendingFile(page);
  const opened = await startOpener(pathToFileURL(page).href);
  if (!opened) remove();
  return { opened, remove };
}
