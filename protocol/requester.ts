/**
 * What a caller needs of a JSON-RPC peer, without the peer: sending a request
 * and awaiting its result, sending a notification, and a server's JSON-RPC
 * error as it comes back (an AlbedoError `ALBEDO_SERVER_ERROR` whose data
 * keeps the server's code). services/transport/rpc-peer.ts implements it;
 * the era negotiation (services/negotiation) uses it, so that room need not
 * import the transport that imports it.
 */
import { AlbedoError } from './errors.ts';
import type { JsonRpcErrorObject } from './jsonrpc.ts';
import { pruned } from './bounds.ts';
import { redactData, redactThenCut, type Secrets } from './redact.ts';

export interface RequestOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Send notifications/cancelled when the request times out or is aborted (default true). */
  cancelOnTimeout?: boolean;
}

export interface Requester {
  /** Sends a request; resolves with the raw result or rejects with an AlbedoError. */
  request(method: string, params: Record<string, unknown> | undefined, opts: RequestOptions): Promise<Record<string, unknown>>;
  /** Sends a notification; a link that is down swallows it. */
  notify(method: string, params?: Record<string, unknown>): void;
}

/** A server's JSON-RPC error as an AlbedoError; the server's code and data stay in `data`. */
export function serverError(method: string, e: JsonRpcErrorObject, secrets: Secrets = []): AlbedoError {
  // The server's text and data are shown, never trusted: bounded in length and depth (deep data could not cross threads).
  // Its secrets are cut out before its text is cut short, and out of every string of its data (protocol/redact.ts).
  const cut = (max: number): string => redactThenCut(e.message, secrets, { keep: 'head', max });
  const message = e.message.length > 4096 ? `${cut(4096)}…` : cut(4096);
  const why = `${method} failed on the server: ${cut(1000)} (${e.code})`;
  return new AlbedoError('ALBEDO_SERVER_ERROR', why, { data: { code: e.code, message, data: redactData(pruned(e.data), secrets) } });
}

/** The JSON-RPC code of a server's error (serverError), undefined for any other failure. */
export function wireCodeOf(err: unknown): number | undefined {
  if (!AlbedoError.is(err) || err.code !== 'ALBEDO_SERVER_ERROR') return undefined;
  return (err.data as { code?: number } | undefined)?.code;
}
