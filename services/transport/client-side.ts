/**
 * The embedder's side of a connection: the capabilities its handlers give,
 * and how a server's own requests reach them. `ping` is answered here; an
 * input request (elicitation, sampling, roots) goes to the embedder's handler
 * when it declared the capability, and is refused as an unknown method
 * otherwise; a handler's failure goes back to the server as a JSON-RPC error.
 */
import { ErrorCode, type JsonRpcRequest } from '../../protocol/jsonrpc.ts';
import { INPUT_METHODS } from '../../protocol/client-input.ts';
import { WireError } from './rpc-peer.ts';
import { AlbedoError } from '../../protocol/errors.ts';

export interface ClientSide {
  capabilities: Record<string, unknown>;
  /**
   * Runs the embedder's handler for one input request (elicitation/create,
   * sampling/createMessage, roots/list); `signal` aborts the handler's own
   * signal when the request waiting on it is given up.
   */
  ask(
    method: string,
    params: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
    key?: string,
    tag?: string,
  ): Promise<Record<string, unknown>>;
}

/** A client that declared nothing: every input request is refused. */
export const NO_CLIENT: ClientSide = {
  capabilities: {},
  ask: (method) =>
    Promise.reject(new WireError(ErrorCode.MethodNotFound, `Method not found: ${method} (this client declares no capabilities)`)),
};

/**
 * The answer to a server's own request (see the module's comment), given
 * `timeoutMs` for the embedder's handler; `tag` names the call it belongs to, when known. A `shared` connection
 * refuses a request no call of ours can be named for (none in flight, or several). `signal` aborts when the server
 * cancels its request or the connection ends.
 */
export async function answerServerRequest(
  client: ClientSide,
  req: JsonRpcRequest,
  timeoutMs: number,
  signal: AbortSignal,
  tag?: string,
  shared = false,
): Promise<Record<string, unknown>> {
  if (req.method === 'ping') return {};
  // A connection sessions share (services/composer/shared-port.ts) asks only on behalf of the call that caused it.
  if (shared && tag === undefined) {
    throw new WireError(ErrorCode.MethodNotFound, `Method not found: ${req.method} (a shared connection asks only within a call)`);
  }
  const cap = Object.hasOwn(INPUT_METHODS, req.method) ? INPUT_METHODS[req.method] : undefined;
  if (!cap || !Object.hasOwn(client.capabilities, cap)) {
    throw new WireError(
      ErrorCode.MethodNotFound,
      `Method not found: ${req.method} (this client did not declare ${cap ?? 'a capability for it'})`,
    );
  }
  try {
    return await (tag === undefined
      ? client.ask(req.method, req.params ?? {}, timeoutMs, signal)
      : client.ask(req.method, req.params ?? {}, timeoutMs, signal, undefined, tag));
  } catch (err) {
    if (err instanceof WireError) throw err;
    // The owner refused (no one to ask: a gateway's host without the capability): the server hears the spec's refusal.
    if (AlbedoError.is(err) && err.code === 'ALBEDO_INPUT_REQUIRED') {
      throw new WireError(ErrorCode.MethodNotFound, `Method not found: ${req.method} (no client to ask)`);
    }
    throw new WireError(ErrorCode.InternalError, `the client's ${cap} handler failed: ${(err as Error).message}`);
  }
}
