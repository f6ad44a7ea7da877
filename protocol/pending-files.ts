/**
 * Files and directories a process must not leave behind — the redirect
 * pages of sign-ins it waits for (bin/client/browser.ts, api/browser.ts),
 * which hold an authorization request's `state` and PKCE challenge. They go
 * when `done()` is called, when the process exits, and on SIGTERM or
 * SIGHUP: a signal's default action ends the process without its 'exit'
 * event. Only while something is pending does this listen to those signals;
 * then, if no other listener handles the signal (the command's own, which
 * exits in its own way and so runs the 'exit' removal too), the process
 * exits with the conventional status (143, 129) once the pages are gone.
 * Otherwise the signals behave as they would without it.
 *
 * It imports only built-ins: the CLI loads it (test/architecture).
 */
import { rmSync } from 'node:fs';

const SIGNALS = { SIGTERM: 143, SIGHUP: 129 } as const;
type Sig = keyof typeof SIGNALS;

const pending = new Set<string>();
let exitHooked = false;
let listening = false;

function removeAll(): void {
  for (const p of pending) {
    try {
      rmSync(p, { recursive: true, force: true });
    } catch {
      /* gone, or not ours to remove */
    }
  }
  pending.clear();
}

const handlers: Record<Sig, () => void> = {
  SIGTERM: () => onSignal('SIGTERM'),
  SIGHUP: () => onSignal('SIGHUP'),
};

function onSignal(sig: Sig): void {
  // Ours runs first (prepended): any other listener of the signal is still registered here, and will end the process itself.
  const others = process.listenerCount(sig) - 1;
  removeAll();
  quiet();
  if (others === 0) process.exit(SIGNALS[sig]);
}

function listen(): void {
  if (listening) return;
  listening = true;
  for (const sig of Object.keys(SIGNALS) as Sig[]) process.prependListener(sig, handlers[sig]);
}

/** Nothing pending: the signals are left as they were. */
function quiet(): void {
  if (!listening) return;
  listening = false;
  for (const sig of Object.keys(SIGNALS) as Sig[]) process.off(sig, handlers[sig]);
}

/** Notes `p` (a file, or a directory and what is in it) as pending; returns what removes it now (harmless when gone). */
export function pendingFile(p: string): () => void {
  pending.add(p);
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', removeAll);
  }
  listen();
  return () => {
    if (pending.delete(p)) {
      try {
        rmSync(p, { recursive: true, force: true });
      } catch {
        /* gone */
      }
    }
    if (pending.size === 0) quiet();
  };
}
