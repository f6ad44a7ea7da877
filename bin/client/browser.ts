/**
 * The desktop's URL opener (`xdg-open`, `open`, `explorer`), for `albedo
 * open`, `albedo mcp sign-in --open` and the `/mcp` screen's sign-in: started
 * detached, the URL one argument, no shell, never waited for. It says
 * nothing itself: each caller tells the user in its own way.
 */
import { spawn } from 'node:child_process';

/** The opener of this platform. */
export const OPENER = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';

/** Starts the opener on `url`; resolves with whether it started. */
export function openBrowser(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    try {
      const child = spawn(OPENER, [url], { detached: true, stdio: 'ignore' });
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
