/**
 * The transport service's message map: connection actors over stdio, each
 * doing its own era negotiation and client operations.
 */
import type { ResolvedServer } from '../config.ts';
import type { Era } from '../versions.ts';
import type { Catalogue, Implementation, ServerCapabilities } from '../mcp.ts';
import type { SerializedError } from '../errors.ts';

export interface ConnectionInfo {
  era: Era;
  protocolVersion: string;
  serverInfo: Implementation | null;
  capabilities: ServerCapabilities;
  instructions: string | null;
  /** How the era was decided: a fresh probe, or the cached verdict confirmed. */
  detection: 'probe' | 'cached';
}

export interface OpenResult extends ConnectionInfo {
  catalogue: Catalogue;
  warnings: string[];
}

/** A log message's severity (RFC 5424), least severe first. */
export type LoggingLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

/** What `completion/complete` completes: a prompt's argument, or a resource template's variable. */
export type CompletionRef = { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string };

/** A `completion/complete` answer, checked: at most 100 values. */
export interface CompletionResult {
  completion: { values: string[]; total?: number; hasMore?: boolean };
}

/**
 * One MCP operation on an open connection. `progressToken` (chosen by the
 * caller, unique on the connection while the request runs) is sent as
 * `params._meta.progressToken`, and the server's progress naming it comes
 * back as `connection/progress` events. The operations after `ping` need the
 * server to declare their capability (`logging`, `completions`,
 * `resources.subscribe`), else ALBEDO_NOT_FOUND (not run, `data.capability`).
 */
/**
 * The client capabilities one request declares, narrower than its connection's (a gateway's host declared only
 * these): a 2026-07-28 server is told them in the request's envelope, and its input rounds may ask only for these.
 */
export type Caps = Record<string, unknown>;

export type ClientOp =
  | { method: 'tools/list' | 'resources/list' | 'resources/templates/list' | 'prompts/list' }
  | { method: 'tools/call'; name: string; arguments?: Record<string, unknown>; progressToken?: string | number; capabilities?: Caps }
  | { method: 'resources/read'; uri: string; progressToken?: string | number; capabilities?: Caps }
  | { method: 'prompts/get'; name: string; arguments?: Record<string, string>; progressToken?: string | number; capabilities?: Caps }
  | { method: 'ping' }
  | { method: 'logging/setLevel'; level: LoggingLevel }
  | {
      method: 'completion/complete';
      ref: CompletionRef;
      argument: { name: string; value: string };
      context?: { arguments?: Record<string, string> };
    }
  /** `holder`: the session asking (a shared connection keeps the subscription until its last holder unsubscribes). */
  | { method: 'resources/subscribe' | 'resources/unsubscribe'; uri: string; holder?: string };

export interface TransportMethods {
  /** Spawns the server, negotiates its era and discovers its catalogue. */
  'connection/open': {
    params: { id: string; server: ResolvedServer; eraCachePath: string | null; capabilities: Record<string, unknown>; name?: string };
    result: OpenResult;
  };
  /** Runs one operation; a dropped connection is dialled again first. */
  'connection/request': { params: { id: string; op: ClientOp; timeoutMs: number }; result: unknown };
  /**
   * What an open connection was opened with, its catalogue as it is now (null:
   * no such actor, or not open, or its link dropped and not dialled again yet). A composer restarted after a crash resumes
   * the connections of its sessions with it instead of dialling them again.
   */
  'connection/info': { params: { id: string }; result: OpenResult | null };
  /** Closes the connection and reaps the server's process group. */
  'connection/close': { params: { id: string }; result: { stderrTail: string } };
}

export interface TransportEvents {
  /** A list-changed notification led to a new catalogue that differs from the last one. */
  'connection/catalogue-changed': { id: string; catalogue: Catalogue };
  /** The server went away without being asked to (exit, bad frame). The next request dials again. */
  'connection/dropped': { id: string; error: SerializedError };
  /** A warning worth showing the user (schema problems, a late garbage line). */
  'connection/warned': { id: string; message: string; code?: string };
  /**
   * The server's progress on a request sent with `token` (a token the
   * connection did not send is ignored); `message` redacted and cut to 1,000
   * characters. At most 100 a second per connection, the rest dropped.
   */
  'connection/progress': { id: string; token: string | number; progress: number; total?: number; message?: string };
  /** The server's `notifications/message`: `data` cut to 32 levels, 2,000 values, 64 Ki characters (redacted). 100 a second at most. */
  'connection/log': { id: string; level: LoggingLevel; logger?: string; data: unknown };
  /** `notifications/resources/updated` for a resource the connection subscribed to. At most 100 a second. */
  'connection/resource-updated': { id: string; uri: string };
}

/**
 * The id prefix of a connection sessions share (services/composer/shared-port.ts): the transport refuses a server's
 * own request on one unless it can name the call that caused it.
 */
export const SHARED_CONNECTION_PREFIX = 'shared-';

/**
 * The HTTP statuses that may pass — 408, 429 and 5xx — whatever their body says: a failed request with one is
 * `ALBEDO_HTTP_ERROR` with the status (and the server's Retry-After) in its data, which a connect retry tries again.
 */
export const mayPass = (status: number): boolean => status === 408 || status === 429 || (status >= 500 && status <= 599);
