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

/** One MCP operation on an open connection. */
export type ClientOp =
  | { method: 'tools/list' | 'resources/list' | 'resources/templates/list' | 'prompts/list' }
  | { method: 'tools/call'; name: string; arguments?: Record<string, unknown> }
  | { method: 'resources/read'; uri: string }
  | { method: 'prompts/get'; name: string; arguments?: Record<string, string> }
  | { method: 'ping' };

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
}
