/**
 * A call planned down to one MCP operation, the same way wherever it is
 * made: by the session in the composer, or on the owner's thread for a call
 * that goes straight to an open connection (api/sessions.ts). Checks the
 * name and options, resolves the name through the generation's routing
 * table, restores the server's argument names, builds the operation.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_ENVELOPE_DEPTH, depthOf } from '../../protocol/bounds.ts';
import type { RouteEntry } from '../../protocol/catalogue.ts';
import type { ServerState, StateReason } from '../../protocol/composer.ts';
import type { ClientOp } from '../../protocol/services/transport.ts';
import { resolveCall } from '../catalogue/definitions.ts';
import { restoreArguments } from '../catalogue/schema/args.ts';
import { callArguments, notAdvertised, operationFor } from './routing.ts';

/** The deepest arguments a call may carry: they cross threads inside an envelope, which has a few levels of its own. */
export const MAX_ARGUMENT_DEPTH = MAX_ENVELOPE_DEPTH - 8;

/** The longest timeout a call may ask for: a day (Node's timers end at 2^31 − 1 ms, and the call's budget adds to it). */
export const MAX_CALL_TIMEOUT_MS = 86_400_000;

export interface PlannedCall {
  /** The advertised name the call resolved to. */
  name: string;
  route: RouteEntry;
  op: ClientOp;
}

/** Refuses a call without a name, or with a timeout that is not a positive integer (not run). */
export function checkCall(name: unknown, opts: { timeoutMs?: unknown }): asserts name is string {
  if (typeof name !== 'string' || !name) throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'a call needs a tool name', { outcome: 'not_run' });
  const t = opts.timeoutMs;
  if (t !== undefined && !(typeof t === 'number' && Number.isInteger(t) && t > 0 && t <= MAX_CALL_TIMEOUT_MS)) {
    const message = `timeoutMs must be a positive integer of at most ${MAX_CALL_TIMEOUT_MS} (a day)`;
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
  }
}

/**
 * Plans a call of `name` (an advertised name or `server/tool`) with the
 * model's arguments. A name that resolves to nothing is ALBEDO_NOT_FOUND
 * (or ALBEDO_NEEDS_SIGN_IN for a server waiting for one), bad arguments
 * ALBEDO_INVALID_ARGUMENT; both not run.
 */
export function planCall(
  routes: ReadonlyMap<string, RouteEntry>, servers: Iterable<string>,
  serverOf: (name: string) => { name: string; state: ServerState; reason?: StateReason } | undefined,
  name: string, args: unknown,
): PlannedCall {
  if (depthOf(args, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH) {
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`, { outcome: 'not_run' });
  }
  let resolved;
  try {
    resolved = resolveCall(routes, name, servers);
  } catch (err) {
    throw notAdvertised(err, serverOf);
  }
  // The model's arguments back in the server's form: renamed properties get their names back, strict-mode nulls go.
  const restored = restoreArguments(callArguments(args), resolved.route.args) as Record<string, unknown>;
  return { name: resolved.name, route: resolved.route, op: operationFor(resolved.route, restored) };
}
