/**
 * Albedo's local error family. Every error that leaves a service carries a
 * stable `code` (tests and callers match on it, never on text) and, for a
 * request that may have reached a server, an `outcome`:
 *   - 'not_run':  the request certainly did not run (e.g. spawn failed);
 *   - 'unknown':  it may or may not have run (transport lost mid-call) —
 *                 never retried automatically, the caller must inspect.
 * Wire errors (a server's JSON-RPC error) are wrapped as ALBEDO_SERVER_ERROR
 * with the server's code and message in `data`.
 */

export const ErrorCodes = [
  'ALBEDO_SERVICE_LOST',
  'ALBEDO_SERVICE_FAILED',
  'ALBEDO_SERVICE_UNKNOWN',
  'ALBEDO_DEADLINE',
  'ALBEDO_TIMEOUT',
  'ALBEDO_SPAWN_FAILED',
  'ALBEDO_SERVER_EXITED',
  'ALBEDO_FRAME_TOO_LARGE',
  'ALBEDO_ERA_REFUSED',
  'ALBEDO_HANDSHAKE_FAILED',
  'ALBEDO_HTTP_ERROR',
  'ALBEDO_STREAM_BROKEN',
  'ALBEDO_SESSION_EXPIRED',
  'ALBEDO_SERVER_ERROR',
  'ALBEDO_INPUT_REQUIRED',
  'ALBEDO_INVALID_RESPONSE',
  'ALBEDO_CONNECTION_CLOSED',
  'ALBEDO_INVALID_CONFIG',
  'ALBEDO_INVALID_ARGUMENT',
  'ALBEDO_NOT_FOUND',
  'ALBEDO_CLOSED',
  'ALBEDO_INTERNAL',
  /** The server wants OAuth and there is no usable token: the request did not run; the user must sign in. */
  'ALBEDO_NEEDS_SIGN_IN',
  /** A sign-in or token request failed; `data.reason` says which check (state, iss, issuer, resource, https, ...). */
  'ALBEDO_SIGN_IN_FAILED',
  /** A server's catalogue passed a bound (depth, items, bytes); `data.server` names it, `data.limit` says which. */
  'ALBEDO_CATALOGUE_TOO_LARGE',
  /** A queue in front of a server is full (a stdio server that stopped reading): the request did not run. */
  'ALBEDO_OVERLOADED',
  /** A settings write found the server's entry changed on disk since the write was planned (a hand edit): nothing was written. */
  'ALBEDO_EDIT_CONFLICT',
  /** An editor's MCP servers (an ACP session's overlay) could not be published: invalid, duplicate, colliding, unsupported or
   * failing to start or list; the previous overlay is unchanged. `data.server` names the server, `data.reason` says why. */
  'ALBEDO_OVERLAY_FAILED',
  /** The overlay was installed but the session's reload failed: the replacement stays installed, the session waits for a reload. */
  'ALBEDO_OVERLAY_RELOAD_FAILED',
  /** An overlay publication went unanswered (the composer was lost or timed out): it may still complete. */
  'ALBEDO_OVERLAY_UNCERTAIN',
  /** A session's overlay publication waits for its reload: its tool calls are refused before they run. */
  'ALBEDO_OVERLAY_RELOAD_PENDING',
  /** A non-empty editor overlay was lost (the daemon or its composer restarted): calls wait for the editor to resume. */
  'ALBEDO_OVERLAY_REATTACH_REQUIRED',
  /** Another attachment holds the session (its lease is live): refused. */
  'ALBEDO_ATTACHMENT_HELD',
  /** The attachment is gone (its lease expired, another took it, the daemon restarted): the editor must resume. */
  'ALBEDO_ATTACHMENT_LOST',
  /** A read resource's blob could not be written to its file in the session's working directory (a full disk, a write
   * refused): the file was removed; `data.errno`, `data.file` (api/export-blob.ts). */
  'ALBEDO_EXPORT_FAILED',
] as const;
export type AlbedoErrorCode = (typeof ErrorCodes)[number];
export type Outcome = 'not_run' | 'unknown';

export interface SerializedError {
  name: 'AlbedoError';
  code: AlbedoErrorCode;
  message: string;
  outcome?: Outcome;
  data?: unknown;
}

const BRAND = Symbol.for('albedo.error');

export class AlbedoError extends Error {
  readonly code: AlbedoErrorCode;
  readonly outcome: Outcome | undefined;
  readonly data: unknown;

  constructor(code: AlbedoErrorCode, message: string, options: { outcome?: Outcome; data?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AlbedoError';
    this.code = code;
    this.outcome = options.outcome;
    this.data = options.data;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** True for an AlbedoError from any realm or thread (the brand survives; instanceof may not). */
  static is(value: unknown): value is AlbedoError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  toJSON(): SerializedError {
    const out: SerializedError = { name: 'AlbedoError', code: this.code, message: this.message };
    if (this.outcome) out.outcome = this.outcome;
    if (this.data !== undefined) out.data = this.data;
    return out;
  }
}

/** Turns anything thrown into a plain object that crosses a thread boundary. */
export function serializeError(err: unknown): SerializedError {
  if (AlbedoError.is(err)) return err.toJSON();
  const code =
    typeof (err as { code?: unknown })?.code === 'string' && (ErrorCodes as readonly string[]).includes((err as { code: string }).code)
      ? (err as { code: AlbedoErrorCode }).code
      : 'ALBEDO_INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  return { name: 'AlbedoError', code, message };
}

export function deserializeError(e: SerializedError): AlbedoError {
  return new AlbedoError(e.code, e.message, { outcome: e.outcome, data: e.data });
}
