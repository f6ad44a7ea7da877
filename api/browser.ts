/**
 * The default way to show a sign-in URL: print it (always) and open the
 * system browser unless ALBEDO_NO_BROWSER is set. The opener is detached
 * and not waited for; it exits once it handed the URL over.
 */
import { spawn } from 'node:child_process';

export function openAuthorizationUrl(req: { server: string; url: string; signal?: AbortSignal }): undefined {
  process.stderr.write(`albedo: to sign in to ${req.server}, open this URL in a browser:\n  ${req.url}\n`);
  if (process.env.ALBEDO_NO_BROWSER) return undefined;
  const [cmd, args] = process.platform === 'darwin'
    ? ['open', [req.url]]
    : process.platform === 'win32'
      ? ['cmd', ['/c', 'start', '""', req.url]]
      : ['xdg-open', [req.url]];
  try {
    const child = spawn(cmd as string, args as string[], { stdio: 'ignore', detached: process.platform !== 'win32' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // No opener: the printed URL is enough.
  }
  return undefined;
}
