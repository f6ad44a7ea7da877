/**
 * One request with its era's params, checking `resultType`. An
 * `input_required` result (2026-07-28 MRTR, basic/patterns/mrtr) is
 * fulfilled by the embedder's handlers and the request sent again on a new
 * id with `inputResponses` and the byte-exact `requestState`, at most
 * MAX_INPUT_ROUNDS rounds, all within one deadline.
 */
import { META_CLIENT_CAPABILITIES } from '../../protocol/rev2026-07-28/index.ts';
import { AlbedoError } from '../../protocol/errors.ts';
import { ErrorCode } from '../../protocol/jsonrpc.ts';
import { describeZodError } from '../../protocol/config.ts';
import { resultTypeOf } from '../../protocol/mcp.ts';
import { INPUT_METHODS, MRTR_METHODS, MAX_INPUT_ROUNDS, inputRequestsSchema } from '../../protocol/client-input.ts';
import { wireCodeOf } from '../../protocol/requester.ts';
import { pruned } from '../../protocol/bounds.ts';
import { redactThenCut, type Secrets } from '../../protocol/redact.ts';

export interface InputRoundsContext {
  /** Sends one request (era params added) and resolves with its raw result. */
  send(
    method: string,
    params: Record<string, unknown> | undefined,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
  /** The capabilities the embedder declared. */
  capabilities: Record<string, unknown>;
  /** Runs the embedder's handler for one input request; `signal` aborts when the request is given up. */
  /**
   * `key`: the server's name for the question in an input_required round (none for a 2025-era server's own request);
   * `tag`: the progress token of the request that asks (the caller's call, so the owner can tell whose question it is).
   */
  ask(
    method: string,
    params: unknown,
    timeoutMs: number,
    signal?: AbortSignal,
    key?: string,
    tag?: string,
  ): Promise<Record<string, unknown>>;
  /** The connection's secrets: cut out of the server's text before it is cut short into a message. */
  redactor?: Secrets;
}

/** The server's value for a message: secrets cut out, then at most `max` characters (protocol/redact.ts); a string quoted after. */
function shown(c: InputRoundsContext, value: unknown, max: number): string {
  const cut = (text: string): string => redactThenCut(text, c.redactor ?? [], { keep: 'head', max });
  return typeof value === 'string' ? JSON.stringify(cut(value)) : cut(JSON.stringify(value) ?? String(value));
}

/** One input_required round may ask for at most this many inputs. */
const MAX_INPUT_REQUESTS = 64;

const inputRequired = (message: string, data: unknown): AlbedoError =>
  new AlbedoError('ALBEDO_INPUT_REQUIRED', message, { outcome: 'not_run', data });

const invalid = (message: string): AlbedoError => new AlbedoError('ALBEDO_INVALID_RESPONSE', message);

/** Resolves with a `complete` result; rejects with ALBEDO_INPUT_REQUIRED when input is needed that no handler gives. */
export async function requestWithInput(
  c: InputRoundsContext,
  method: string,
  params: Record<string, unknown> | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  // Every call waits here, so this frame holds only what a round needs; the rare input_required work is in nextRound.
  const deadline = Date.now() + timeoutMs;
  let retry: Record<string, unknown> | undefined;
  for (let round = 0; ; round++) {
    let result: Record<string, unknown>;
    try {
      // The first round sends the caller's params as they are; a retry adds its answers to a copy.
      result = await c.send(method, round === 0 ? params : { ...params, ...retry }, Math.max(1, deadline - Date.now()), signal);
    } catch (err) {
      throw wireCodeOf(err) === ErrorCode.MissingRequiredClientCapability ? missingCapabilities(c, method, err as AlbedoError) : err;
    }
    if (resultTypeOf(result) === 'complete') return result;
    retry = await nextRound(c, method, result, round, deadline, signal, tagOf(params), declaredBy(c, params));
  }
}

/** The progress token the caller's request carries: its call's, which the owner may know the question by. */
function tagOf(params: Record<string, unknown> | undefined): string | undefined {
  const meta = params?._meta as { progressToken?: unknown } | undefined;
  return typeof meta?.progressToken === 'string' ? meta.progressToken : undefined;
}

/** What the request may be asked for: its own capabilities (within the connection's), else the connection's. */
function declaredBy(c: InputRoundsContext, params: Record<string, unknown> | undefined): Record<string, unknown> {
  const own = (params?._meta as Record<string, unknown> | undefined)?.[META_CLIENT_CAPABILITIES];
  if (!own || typeof own !== 'object') return c.capabilities;
  return Object.fromEntries(Object.entries(own).filter(([k]) => Object.hasOwn(c.capabilities, k)));
}

/** A server refused the request for client capabilities this client did not declare (-32021). */
function missingCapabilities(c: InputRoundsContext, method: string, err: AlbedoError): AlbedoError {
  const server = err.data as { data?: { requiredCapabilities?: unknown } };
  const required = server.data?.requiredCapabilities;
  const which = required ? ` (${shown(c, required, 300)})` : '';
  const why = `${method} needs client capabilities this client did not declare${which}: register a handler for them`;
  return inputRequired(why, { requiredCapabilities: required, server });
}

/** The answers to a result that is not `complete`, for the next round; throws when there can be none. */
async function nextRound(
  c: InputRoundsContext,
  method: string,
  result: Record<string, unknown>,
  round: number,
  deadline: number,
  signal?: AbortSignal,
  tag?: string,
  declared: Record<string, unknown> = c.capabilities,
): Promise<Record<string, unknown>> {
  const kind = resultTypeOf(result);
  if (kind !== 'input_required') throw invalid(`${method} returned an unknown resultType ${shown(c, kind, 100)}`);
  if (!MRTR_METHODS.has(method))
    throw invalid(`${method} returned resultType input_required, which only tools/call, prompts/get and resources/read may`);
  const raw = result.inputRequests ?? {};
  // zod's record drops a `__proto__` key: refuse it rather than answer a map with a hole in it.
  if (raw && typeof raw === 'object' && Object.hasOwn(raw, '__proto__'))
    throw invalid(`${method} returned inputRequests with a key named __proto__`);
  if (raw && typeof raw === 'object' && Object.keys(raw).length > MAX_INPUT_REQUESTS) {
    throw invalid(`${method} asked for ${Object.keys(raw).length} inputs at once (at most ${MAX_INPUT_REQUESTS})`);
  }
  const parsed = inputRequestsSchema.safeParse(raw);
  if (!parsed.success) throw invalid(`${method} returned malformed inputRequests: ${describeZodError(parsed.error)}`);
  const requests = Object.entries(parsed.data);
  const undeclared = requests.filter(([, r]) => !Object.hasOwn(declared, INPUT_METHODS[r.method]!));
  if (undeclared.length) {
    const list =
      undeclared
        .slice(0, 10)
        .map(([k, r]) => `${shown(c, k, 100)}: ${r.method}`)
        .join(', ') + (undeclared.length > 10 ? ', …' : '');
    throw inputRequired(`${method} needs input (${list}) that this client has no handler for`, {
      inputRequests: pruned(result.inputRequests, 8),
    });
  }
  if (round + 1 >= MAX_INPUT_ROUNDS)
    throw inputRequired(`${method} still asked for input after ${MAX_INPUT_ROUNDS} rounds; gave up`, undefined);
  const answers = await Promise.all(
    requests.map(
      async ([key, r]) => [key, await c.ask(r.method, r.params ?? {}, Math.max(1, deadline - Date.now()), signal, key, tag)] as const,
    ),
  );
  const retry: Record<string, unknown> = {};
  if (result.inputRequests !== undefined) retry.inputResponses = Object.fromEntries(answers);
  if (typeof result.requestState === 'string') retry.requestState = result.requestState;
  return retry;
}
