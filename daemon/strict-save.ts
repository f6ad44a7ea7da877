/**
 * Strict save (docs/design.md, "Saving a server"): before an enabled server
 * is saved, it is tried — the settings service resolves the draft (with the
 * secrets it would store) and asks for the try (`save/try`, which the daemon
 * provides: writes.ts); it is opened through the transport as `connect()`
 * opens a connection (keyed by a fresh id, released afterwards), then
 * closed, the server reaped. Nothing is written here: a server that cannot
 * start is refused (409) before the settings service writes anything, so
 * the files stay exactly as they were. A server that answers 401 is kept,
 * needing a sign-in.
 *
 * The error's message says what happened in a person's words — "did not
 * answer within 30 s", "exited with status 1" (try-failure.ts) — and quotes
 * the last lines of the server's stderr; a server may print what it was
 * given, so every secret value of the draft is cut out of it
 * (protocol/redact.ts, the one redactor: the transport already cut them
 * out before cutting the server's text short).
 */
import { randomUUID } from 'node:crypto';
import type { Kernel } from '../kernel/kernel.ts';
import { AlbedoError } from '../protocol/errors.ts';
import { redact, secretValues } from '../protocol/redact.ts';
import type { SavedCatalogue } from '../protocol/catalogue.ts';
import type { ResolvedServer } from '../protocol/config.ts';
import { ApiError } from './errors.ts';
import { failureMessage } from './try-failure.ts';

export interface TryOptions {
  name: string;
  /** The server as it would be saved (its secret values in it), resolved by the settings service. */
  server: ResolvedServer;
  /** Whether it gets a worker of its own (its entry's `isolate`). */
  isolate: boolean;
  /** The draft's fingerprint: what the try discovers is saved under it. */
  fingerprint: string;
  /** The save signs it out: it is tried without its tokens. */
  signOut: boolean;
  /** $ALBEDO_HOME/store: the era verdict the try finds is kept for later dials. */
  eraCachePath: string | null;
  /** Aborts when the save is given up (its request's client went away): the try is given up on, and nothing is written. */
  signal?: AbortSignal;
}

/** What the try found: a connection (with what it discovered, under the draft's fingerprint), or a server that needs a sign-in. */
export type TryResult = { result: 'connected'; row: SavedCatalogue } | { result: 'needs_sign_in' };

/** Failures of the daemon rather than of the server tried. */
const NOT_THE_SERVER: ReadonlySet<string> = new Set([
  'ALBEDO_CLOSED',
  'ALBEDO_SERVICE_LOST',
  'ALBEDO_SERVICE_FAILED',
  'ALBEDO_SERVICE_UNKNOWN',
  'ALBEDO_DEADLINE',
  'ALBEDO_INTERNAL',
]);

/**
 * Tries the draft: resolves connected (with its discovery) or needs_sign_in, or throws an
 * ApiError 409 with the code of what failed (ALBEDO_SPAWN_FAILED,
 * ALBEDO_SERVER_EXITED, ALBEDO_TIMEOUT, ALBEDO_HANDSHAKE_FAILED, …).
 */
export async function tryServer(kernel: Kernel, o: TryOptions): Promise<TryResult> {
  let server = o.server;
  // A sign-out is tried as it will be: without the tokens it drops. The transport reads tokens from creds.json, which is not
  // written before the save; with no file it keeps the try's OAuth state in the worker's memory, so the server sees no token.
  if (o.signOut && server.type === 'http' && server.auth) server = { ...server, auth: { ...server.auth, credsPath: null } };
  const id = randomUUID();
  let opened;
  try {
    opened = await kernel.call(
      'transport',
      'connection/open',
      { id, server, eraCachePath: o.eraCachePath, capabilities: {}, name: o.name },
      { key: id, isolate: o.isolate, timeoutMs: server.startupTimeoutMs * 2 + 5_000, ...(o.signal ? { signal: o.signal } : {}) },
    );
  } catch (err) {
    await kernel.release('transport', id);
    if (AlbedoError.is(err) && err.code === 'ALBEDO_NEEDS_SIGN_IN') return { result: 'needs_sign_in' };
    // The daemon's own trouble (it is stopping, a worker was lost) says nothing about the server: not a 409.
    if (!AlbedoError.is(err) || NOT_THE_SERVER.has(err.code)) throw err;
    // In a person's words (try-failure.ts), with the server's last stderr lines; every secret of the draft cut out of it all.
    const message = redact(failureMessage(o.name, err, server), secretValues(server));
    // Whatever the try's own outcome, the save did not happen.
    throw new ApiError(409, err.code, message, { outcome: 'not_run' });
  }
  try {
    await kernel.call('transport', 'connection/close', { id }, { key: id, timeoutMs: 15_000 });
  } catch {
    // A lost worker took the server with it (its launcher saw the lifeline close).
  }
  await kernel.release('transport', id);
  const { era, protocolVersion, serverInfo, capabilities, instructions, catalogue } = opened;
  return {
    result: 'connected',
    row: {
      server: o.name,
      fingerprint: o.fingerprint,
      era,
      protocolVersion,
      serverInfo,
      capabilities,
      instructions,
      catalogue,
      savedAt: Date.now(),
    },
  };
}
