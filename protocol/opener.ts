/**
 * The pure half of opening a URL in the desktop's browser, shared by the
 * CLI (bin/client/browser.ts) and the library's default sign-in handler
 * (api/browser.ts). A URL worth opening carries a secret (a login code; an
 * authorization request's `state` and PKCE challenge), and an argument
 * vector is readable by every local user through /proc: the opener is
 * never given the URL, only the file:// address of a page of the user's
 * own (0600, in a 0700 directory) that sends the browser on to it. And no
 * shell runs on any platform (`cmd /c start` would read `&` in a URL as a
 * command separator): the opener is started directly with an argument
 * vector. Pure: no I/O.
 */

/** How the opener is started: a program and its arguments, never through a shell. */
export interface OpenerCommand {
  file: string;
  args: string[];
}

/**
 * The opener of `platform` for `target`, which must be a `file:` URL (the
 * redirect page): `xdg-open`, `open`, or on Windows `rundll32.exe
 * url.dll,FileProtocolHandler` (ShellExecute on the target; no cmd.exe, so
 * `&`, `|`, `^`, `%` are plain characters). A `file:` URL as Node writes it
 * has no space or quote (they are percent-encoded), so Windows' quoting of
 * the command line leaves it one argument, unchanged.
 */
export function openerCommand(platform: NodeJS.Platform, target: string): OpenerCommand {
  if (!target.startsWith('file://')) throw new Error('the opener is given only the file:// address of a redirect page');
  if (platform === 'darwin') return { file: 'open', args: [target] };
  if (platform === 'win32') return { file: 'rundll32.exe', args: ['url.dll,FileProtocolHandler', target] };
  return { file: 'xdg-open', args: [target] };
}

const escapeAttr = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/'/g, '&#39;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The redirect page for `url` (an http or https URL; anything else — a
 * `javascript:` or `file:` URL from a hostile authorization server — is
 * refused with null): a meta refresh and a link, the URL normalised and
 * escaped for an attribute, no script, no referrer.
 */
export function redirectPageHtml(url: string, text: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const href = escapeAttr(u.href);
  return (
    '<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">' +
    `<meta http-equiv="refresh" content="0;url=${href}"><title>Albedo</title><a href="${href}">${escapeAttr(text)}</a>\n`
  );
}
