/**
 * A call planned down to one MCP operation, the same way wherever it is
 * made: by the session in the composer, or on the owner's thread for a call
 * that goes straight to an open connection (api/sessions.ts). Checks the
 * name and options, resolves the name through the generation's routing
 * table, restores the server's argument names, builds the operation.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_ENVELOPE_DEPTH, depthOf } from '../../protocol/bounds.ts';
import type { ArgPlan, InputCheck, RouteEntry } from '../../protocol/catalogue.ts';
import type { ServerState, StateReason } from '../../protocol/composer.ts';
import type { ClientOp } from '../../protocol/services/transport.ts';
import { resolveCall } from '../catalogue/definitions.ts';
import { planNeeded, restoreArguments } from '../catalogue/schema/args.ts';
import { label } from '../catalogue/definitions-text.ts';
import { operationOf } from '../catalogue/resolve-call.ts';
import { argumentProblems, type ArgumentProblem, type CallerPath } from './check-args.ts';
import { callArguments, exportOf, notAdvertised, operationFor, type ExportAsk } from './routing.ts';

/** The deepest arguments a call may carry: they cross threads inside an envelope, which has a few levels of its own. */
export const MAX_ARGUMENT_DEPTH = MAX_ENVELOPE_DEPTH - 8;

/** The longest timeout a call may ask for: a day (Node's timers end at 2^31 − 1 ms, and the call's budget adds to it). */
export const MAX_CALL_TIMEOUT_MS = 86_400_000;

export interface PlannedCall {
  /** The advertised name the call resolved to. */
  name: string;
  route: RouteEntry;
  op: ClientOp;
  /** A read_resource asking for its blobs to be written to files (routing.ts exportOf); the owner writes them. */
  export?: ExportAsk;
}

/** Refuses a call without a name, or with a timeout that is not a positive integer (not run). */
export function checkCall(name: unknown, opts: { timeoutMs?: unknown }): asserts name is string {
  if (typeof name !== 'string' || !name)
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'a call needs a tool name', { outcome: 'not_run' });
  const t = opts.timeoutMs;
  if (t !== undefined && !(typeof t === 'number' && Number.isInteger(t) && t > 0 && t <= MAX_CALL_TIMEOUT_MS)) {
    const message = `timeoutMs must be a positive integer of at most ${MAX_CALL_TIMEOUT_MS} (a day)`;
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
  }
}

/** The methods `session/request` sends (SessionRequestOp). */
const REQUEST_METHODS = new Set(['logging/setLevel', 'completion/complete', 'resources/subscribe', 'resources/unsubscribe']);

/**
 * Refuses a request (AlbedoSession.request, `session/request`) without a server name, with an
 * operation other than a SessionRequestOp, or with a bad timeout (ALBEDO_INVALID_ARGUMENT, not run).
 * The operation's own fields are checked by the transport.
 */
/** A subscription request marked with the session that holds it (operations.ts counts holders per connection). */
export function heldBy<T extends { method: string }>(op: T, session: string): T {
  return op.method === 'resources/subscribe' || op.method === 'resources/unsubscribe' ? { ...op, holder: session } : op;
}

export function checkRequest(server: unknown, op: unknown, opts: { timeoutMs?: unknown }): asserts server is string {
  if (typeof server !== 'string' || !server)
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', 'a request needs a server name', { outcome: 'not_run' });
  const method = typeof op === 'object' && op !== null ? (op as { method?: unknown }).method : undefined;
  if (typeof method !== 'string' || !REQUEST_METHODS.has(method)) {
    const message = `a session's request is one of ${[...REQUEST_METHODS].join(', ')}`;
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });
  }
  if (depthOf(op, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH) {
    throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', `the request nests deeper than ${MAX_ARGUMENT_DEPTH} levels`, { outcome: 'not_run' });
  }
  checkCall('request', opts);
}

/**
 * Plans a call of `name` (an advertised name, `server/tool`, a raw tool
 * name or an advertised name without its hash: resolveCall) with the
 * model's arguments, checked against the schema `inputs` holds for it
 * (check-args.ts). A name that resolves to nothing is ALBEDO_NOT_FOUND (or
 * ALBEDO_NEEDS_SIGN_IN for a server waiting for one), bad arguments
 * ALBEDO_INVALID_ARGUMENT (`data`: the argument at fault); all not run.
 */
export function planCall(
  routes: ReadonlyMap<string, RouteEntry>,
  servers: Iterable<string>,
  serverOf: (name: string) => { name: string; state: ServerState; reason?: StateReason } | undefined,
  name: string,
  args: unknown,
  inputs?: ReadonlyMap<string, InputCheck>,
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
  const given = callArguments(args);
  const check = inputs?.get(resolved.name);
  if (check) {
    const problems = argumentProblems(
      check.schema,
      restored(resolved.name, resolved.route, given, check.args),
      callerPath(check.args, given),
    );
    refuseInvalid(resolved.name, resolved.route, problems);
  }
  // The model's arguments back in the server's form: renamed properties get their names back, strict-mode nulls go,
  // JSON text is parsed.
  const back = restored(resolved.name, resolved.route, given, resolved.route.args) as Record<string, unknown>;
  const op = operationFor(resolved.route, back);
  const ask = exportOf(resolved.route, back);
  return { name: resolved.name, route: resolved.route, op, ...(ask ? { export: ask } : {}) };
}

/** restoreArguments, its refusal (JSON text that does not parse, or of another kind) said as the schema check says one. */
function restored(name: string, route: RouteEntry, given: unknown, plan: ArgPlan | undefined): unknown {
  try {
    return restoreArguments(given, plan);
  } catch (err) {
    if (!AlbedoError.is(err) || err.code !== 'ALBEDO_INVALID_ARGUMENT' || !err.data) throw err;
    const data = err.data as Omit<ArgumentProblem, 'message'>;
    refuseInvalid(name, route, [{ ...data, message: err.message }]);
    throw err;
  }
}

/** Arguments that do not match the schema: ALBEDO_INVALID_ARGUMENT, not run, naming each argument at fault. */
function refuseInvalid(name: string, route: RouteEntry, problems: ReturnType<typeof argumentProblems>): void {
  if (!problems.length) return;
  const first = problems[0]!;
  const more = problems.length > 3 ? `; and ${problems.length - 3} more` : '';
  const what = route.kind === 'tool' ? `tool ${label(route.tool, 128)}` : operationOf(route);
  const said = problems
    .slice(0, 3)
    .map((p) => p.message)
    .join('; ');
  const message = `${said}${more} (the input schema of ${what} of server ${label(route.server)}; the call was not sent)`;
  throw new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, {
    outcome: 'not_run',
    data: {
      name,
      server: route.server,
      tool: operationOf(route),
      argument: first.argument,
      path: first.path,
      pointer: first.pointer,
      keyword: first.keyword,
      problems: problems.map(({ argument, pointer, keyword, message: m }) => ({ argument, pointer, keyword, message: m })),
    },
  });
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A problem's path (in the server's property names) as the caller named it:
 * a property the profile renamed (`opt.x` advertised as `opt_x`) by the name
 * the caller gave, or, when it gave neither, the advertised one.
 */
function callerPath(plan: ArgPlan | undefined, given: unknown): CallerPath | undefined {
  if (!planNeeded(plan)) return undefined;
  return (path) => {
    let at: ArgPlan | undefined = plan;
    let value = given;
    return path.map((seg) => {
      if (typeof seg === 'number') {
        at = at?.items;
        value = Array.isArray(value) ? value[seg] : undefined;
        return seg;
      }
      const renamed = Object.entries(at?.props ?? {}).find(([k, p]) => p.from === seg && k !== seg);
      const name = renamed && !(isObj(value) && Object.hasOwn(value, seg)) ? renamed[0] : seg;
      const props = at?.props;
      at = props && Object.hasOwn(props, name) ? props[name]!.plan : undefined;
      value = isObj(value) && Object.hasOwn(value, name) ? value[name] : undefined;
      return name;
    });
  };
}
