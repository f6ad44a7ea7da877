/**
 * A call's progress, followed on the owner's thread: the API chooses a token
 * no caller can (a random prefix, a counter), the transport sends it as
 * `_meta.progressToken` and relays the server's progress naming it as
 * `connection/progress`, which only the call that chose the token follows,
 * from when it is sent until it settles. A call without `onProgress` carries
 * no token and subscribes to nothing.
 */
import { randomUUID } from 'node:crypto';
import type { Kernel } from '../kernel/kernel.ts';

/** One progress report of a call: `progress` grows; `total` when the server knows it; `message` redacted, at most 1,000 characters. */
export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

export type OnProgress = (progress: Progress) => void;

const prefix = `albedo-${randomUUID()}-`;
let counter = 0;

/** A token unique in this process (and, by its random prefix, not one a caller would pick). */
export function progressToken(): string {
  return prefix + String(++counter);
}

/**
 * Calls `fn` for each progress event naming `token` (on connection `id` when known); returns the
 * unsubscribe function. A listener that throws costs only that report.
 */
export function followProgress(kernel: Kernel, id: string | undefined, token: string, fn: OnProgress): () => void {
  return kernel.on('transport', 'connection/progress', (e) => {
    if (e.token !== token || (id !== undefined && e.id !== id)) return;
    const p: Progress = { progress: e.progress };
    if (e.total !== undefined) p.total = e.total;
    if (e.message !== undefined) p.message = e.message;
    try {
      fn(p);
    } catch {
      // The caller's listener failing must not fail its call.
    }
  });
}

/** The `context` of each call in flight with a token (AlbedoCallOptions.context), by token. */
const contexts = new Map<string, unknown>();

/** The context the call that chose `token` was given, while it runs (for AlbedoOptions.sessionInput). */
export function contextOf(token: string | undefined): unknown {
  return token === undefined ? undefined : contexts.get(token);
}

/** Runs `run` with a fresh token followed for `fn`, unsubscribing when it settles; `context` is known by the token meanwhile. */
export async function withProgress<T>(
  kernel: Kernel,
  id: string | undefined,
  fn: OnProgress,
  run: (token: string) => Promise<T>,
  context?: unknown,
): Promise<T> {
  const token = progressToken();
  const off = followProgress(kernel, id, token, fn);
  if (context !== undefined) contexts.set(token, context);
  try {
    return await run(token);
  } finally {
    off();
    contexts.delete(token);
  }
}
