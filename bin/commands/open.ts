/**
 * `albedo open`: the web settings pane in the browser. Asks the daemon (found
 * or started as for every command) for a one-time login link
 * (`POST /v1/ui/links`), prints it, and opens it in the desktop's browser
 * unless `ALBEDO_NO_BROWSER` is set. A browser that cannot be started is news
 * on stderr, not a failure: the printed link is enough.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { OPENER, openBrowser } from '../client/browser.ts';
import { Client } from '../client/client.ts';
import { emit, note, safe } from '../client/output.ts';

/** How long a redirect page is kept: the link's own life. */
const PAGE_TTL_MS = 15 * 60_000;

/**
 * A page of the user's own (0600, in the home) that sends the browser on to
 * `url`: the opener and the browser are given its file:// address, not the
 * login code, which would otherwise sit in their argument vectors (readable
 * by other users in /proc). Pages older than a link's life are removed.
 */
function redirectPage(home: string, url: string): string {
  const dir = path.join(home, 'ui-open');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const f of readdirSync(dir)) {
    const p = path.join(dir, f);
    try { if (Date.now() - statSync(p).mtimeMs > PAGE_TTL_MS) rmSync(p, { force: true }); } catch { /* gone meanwhile */ }
  }
  const file = path.join(dir, `${randomBytes(12).toString('hex')}.html`);
  const href = url.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  writeFileSync(file, `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><title>Albedo</title>`
    + `<a href="${href}">Open the Albedo settings pane</a>\n`, { mode: 0o600, flag: 'wx' });
  return pathToFileURL(file).href;
}

/** Opens `url` (through a redirect page in `home`), or says on stderr that it could not. */
async function openOrSay(home: string, url: string): Promise<boolean> {
  const opened = await openBrowser(redirectPage(home, url));
  if (!opened) note(`albedo: cannot open a browser (${OPENER}); open the URL yourself`);
  return opened;
}

interface Link {
  url: string;
  expiresAt: string;
}

export function openCommand(program: Command): void {
  program.command('open')
    .description('open the web settings pane: a one-time login link from the daemon, in the browser unless ALBEDO_NO_BROWSER is set')
    .option('--json', 'print one JSON object: { url, expiresAt, opened }')
    .action(async (o: { json?: boolean }) => {
      const client = new Client();
      const { body } = await client.call<Link>('POST', '/v1/ui/links');
      // The link first: whatever the browser does, the person has it.
      if (!o.json) {
        process.stdout.write(`${safe(body.url)}\n`);
        note(safe(`albedo: the web pane's login link works once, until ${body.expiresAt}`));
      }
      const opened = process.env.ALBEDO_NO_BROWSER ? false : await openOrSay(client.home, body.url);
      if (o.json) emit(true, { url: body.url, expiresAt: body.expiresAt, opened }, () => '');
    });
}
