/**
 * `albedo open`: the web settings pane in the browser. Asks the daemon (found
 * or started as for every command) for a one-time login link
 * (`POST /v1/ui/links`), prints it, and opens it in the desktop's browser
 * unless `ALBEDO_NO_BROWSER` is set. A browser that cannot be started is news
 * on stderr, not a failure: the printed link is enough.
 */
import type { Command } from 'commander';
import { OPENER, openBrowser } from '../client/browser.ts';
import { Client } from '../client/client.ts';
import { emit, note, safe } from '../client/output.ts';

/**
 * Opens `url` through a redirect page in `home` (bin/client/browser.ts: the
 * opener and the browser get its file:// address, not the login code), or
 * says on stderr that it could not. The page is kept after this command
 * exits, for the browser to read; the next `albedo open` removes pages older
 * than a link's life.
 */
async function openOrSay(home: string, url: string): Promise<boolean> {
  const { opened } = await openBrowser(home, url, { keep: true, text: 'Open the Albedo settings pane' });
  if (!opened) note(`albedo: cannot open a browser (${OPENER}); open the URL yourself`);
  return opened;
}

/** How long a link expiring at `expiresAt` (ISO 8601) still works, in words: `15 minutes`, `1 minute`, `less than a minute`. */
export function lifeOf(expiresAt: string, now = Date.now()): string {
  const minutes = Math.round((Date.parse(expiresAt) - now) / 60_000);
  if (!Number.isFinite(minutes)) return 'a short while';
  if (minutes < 1) return 'less than a minute';
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

interface Link {
  url: string;
  expiresAt: string;
}

export function openCommand(program: Command): void {
  program
    .command('open')
    .description('open the web settings pane: a one-time login link from the daemon, in the browser unless ALBEDO_NO_BROWSER is set')
    .option('--json', 'print one JSON object: { url, expiresAt, opened }')
    .action(async (o: { json?: boolean }) => {
      const client = new Client();
      const { body } = await client.call<Link>('POST', '/v1/ui/links');
      // The link first: whatever the browser does, the person has it.
      if (!o.json) {
        process.stdout.write(`${safe(body.url)}\n`);
        note(safe(`albedo: the web pane's login link works once, for ${lifeOf(body.expiresAt)}`));
      }
      const opened = process.env.ALBEDO_NO_BROWSER ? false : await openOrSay(client.home, body.url);
      if (o.json) emit(true, { url: body.url, expiresAt: body.expiresAt, opened }, () => '');
    });
}
