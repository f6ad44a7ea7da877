/**
 * Small pieces of api/session.ts (AlbedoSession): a call's options, how a call tells a transport actor that is gone
 * from a server's own refusal, which of two snapshots is newer, and the checks of a change of extensions.
 */
import { AlbedoError } from '../protocol/errors.ts';
import { describeZodError } from '../protocol/config.ts';
import { extensionsChangeSchema, type ExtensionsChange, type SessionCallOptions } from '../protocol/composer.ts';
import type { OnProgress } from './progress.ts';

/** A session call's options: `onProgress` is told the server's progress on it (the API chooses the progress token). */
export interface AlbedoCallOptions extends SessionCallOptions {
  onProgress?: OnProgress;
  /**
   * Handed back with each input request the call's server makes while it runs (AlbedoOptions.sessionInput's
   * `context`), so the owner knows whose call asks: the daemon's gateway passes the host request it serves.
   */
  context?: unknown;
  /**
   * The client capabilities this call declares (elicitation, sampling, roots), narrower than the session's: a
   * 2026-07-28 server is told them with the request and may ask only for these. The daemon's gateway passes its host's.
   */
  capabilities?: Record<string, unknown>;
}

export const noProgress: OnProgress = () => {};

/** The transport's "no such actor" (not run), as opposed to a server lacking a capability (`data.capability`), which is final. */
export const actorGone = (err: unknown): boolean =>
  AlbedoError.is(err) &&
  err.code === 'ALBEDO_NOT_FOUND' &&
  err.outcome === 'not_run' &&
  (err.data as { capability?: unknown } | undefined)?.capability === undefined;

export const badProgress = (): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'onProgress must be a function', { outcome: 'not_run' });

export const newer = (a: [number, number], b: [number, number]): boolean => a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/** A change of extensions checked before it is sent (the composer checks it again): ALBEDO_INVALID_ARGUMENT, not run. */
export function extensionsChange(change: unknown): ExtensionsChange {
  const parsed = extensionsChangeSchema.safeParse(change);
  if (parsed.success) return parsed.data;
  throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `extensions: ${describeZodError(parsed.error)}`, { outcome: 'not_run' });
}
