/**
 * The operations a connection runs for its caller (`ClientOp`): a list (all
 * its pages), tools/call, resources/read, prompts/get, ping, logging/setLevel,
 * completion/complete, resources/subscribe and unsubscribe. Every result is
 * checked against its schema and the depth bound before it is handed back,
 * since a result nested too deep could not even cross to the caller's thread
 * (structured clone recurses). The common call is a chain of two promises: no
 * async function's frame, no await of a settled dial, no zod parse of a plain
 * tools/call result (result-fast-path.ts).
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { ErrorCode } from '../../protocol/jsonrpc.ts';
import { DISCOVER_METHOD, META_CLIENT_CAPABILITIES } from '../../protocol/rev2026-07-28/index.ts';
import { callToolResultSchema, readResourceResultSchema, getPromptResultSchema } from '../../protocol/mcp.ts';
import { describeZodError } from '../../protocol/config.ts';
import { MAX_DEPTH, depthOf } from '../../protocol/bounds.ts';
import type { ClientOp, LoggingLevel } from '../../protocol/services/transport.ts';
import type { ServerCapabilities } from '../../protocol/mcp.ts';
import { LOGGING_LEVELS } from './notices.ts';
import { checkCompletion, completionParams } from './completions.ts';
import { listAll, type Lister } from './discovery.ts';
import { wireCodeOf } from '../../protocol/requester.ts';
import { callToolResultFast } from './result-fast-path.ts';
import type { z } from 'zod';

type Raw = Record<string, unknown>;

/** What an operation needs of one live link (made once per dial). */
export interface OpTarget {
  era: 'modern' | 'legacy';
  /** An HTTP link: a tools/call refused for its headers (-32020) is sent once more (callTool). */
  http: boolean;
  lister: Lister;
  /** One request with its era's params, input_required rounds fulfilled (input-rounds.ts). */
  request(method: string, params: Raw | undefined, timeoutMs: number, signal?: AbortSignal): Promise<Raw>;
  capabilities: ServerCapabilities;
  /** A modern server has no logging/setLevel: the level goes in every later request's envelope (era-params.ts). */
  setLogLevel(level: LoggingLevel): void;
  /** A modern server has no resources/subscribe: the URI joins (or leaves) the held subscriptions/listen's filter. */
  listenTo(uri: string, on: boolean): Promise<void>;
  /** What a legacy server was asked to keep. */
  asked: Asked;
}

/** What a legacy server was asked to keep (its log level, its subscriptions): a new session after a redial is asked again. */
export class Asked {
  level: LoggingLevel | undefined;
  readonly uris = new Set<string>();
  /**
   * Who holds each subscription (both eras): the sessions of a shared connection subscribe and unsubscribe each for
   * itself, so the server is asked to subscribe for the first holder and to unsubscribe only when the last leaves.
   */
  readonly holders = new Map<string, Set<string>>();

  /** Whether `holder` joining (`on`) or leaving the URI's subscription changes what the server must be asked. */
  changes(uri: string, holder: string, on: boolean): boolean {
    const set = this.holders.get(uri);
    if (on) return !set?.size;
    return !!set && set.has(holder) && set.size === 1;
  }

  /** Records what was asked of the server (or found unneeded). */
  hold(uri: string, holder: string, on: boolean): void {
    const set = this.holders.get(uri) ?? new Set<string>();
    if (on) set.add(holder);
    else set.delete(holder);
    if (set.size) this.holders.set(uri, set);
    else this.holders.delete(uri);
  }

  /** The requests that ask a new session the same. */
  again(): Array<[string, Raw]> {
    const out: Array<[string, Raw]> = this.level === undefined ? [] : [['logging/setLevel', { level: this.level }]];
    for (const uri of this.uris) out.push(['resources/subscribe', { uri }]);
    return out;
  }
}

/**
 * A request's params with the caller's progress token and its own client capabilities in `_meta` (nothing added
 * without them: the plain call stays as it was).
 */
function withProgress(params: Raw, token: string | number | undefined, caps?: Raw): Raw {
  if (token !== undefined) params._meta = { progressToken: token };
  if (caps !== undefined) params._meta = { ...(params._meta as Raw | undefined), [META_CLIENT_CAPABILITIES]: caps };
  return params;
}

const notRun = (why: string, data?: Raw): Promise<never> =>
  Promise.reject(new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, data ? { outcome: 'not_run', data } : { outcome: 'not_run' }));

/** An operation the server did not declare the capability of: not found, not run, `data.capability` naming it. */
function undeclared(method: string, capability: string): Promise<never> {
  const why = `the server does not declare the ${capability} capability that ${method} needs; the request was not sent`;
  return Promise.reject(new AlbedoError('ALBEDO_NOT_FOUND', why, { outcome: 'not_run', data: { method, capability } }));
}

/** Runs `op`; rejects with an AlbedoError (never throws). */
export function operate(t: OpTarget, op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  switch (op.method) {
    case 'tools/call': {
      const params = withProgress({ name: op.name, arguments: op.arguments ?? {} }, op.progressToken, op.capabilities);
      // Only HTTP can refuse a call for its headers; stdio goes straight to the request.
      return (t.http ? callTool(t, params, timeoutMs, signal) : t.request(op.method, params, timeoutMs, signal)).then(checkToolResult);
    }
    case 'tools/list':
    case 'resources/list':
    case 'resources/templates/list':
    case 'prompts/list': {
      const method = op.method;
      return listAll(t.lister, method, timeoutMs, [], signal).then((listed) => bounded(method, listed.items));
    }
    case 'resources/read':
      return t
        .request(op.method, withProgress({ uri: op.uri }, op.progressToken, op.capabilities), timeoutMs, signal)
        .then((raw) => checked(readResourceResultSchema, 'resources/read', raw));
    case 'prompts/get': {
      const params = withProgress({ name: op.name, arguments: op.arguments ?? {} }, op.progressToken, op.capabilities);
      return t.request(op.method, params, timeoutMs, signal).then((raw) => checked(getPromptResultSchema, 'prompts/get', raw));
    }
    case 'ping':
      // 2026-07-28 removed ping: a modern server's liveness is a server/discover answer.
      return t.era === 'modern'
        ? t.request(DISCOVER_METHOD, undefined, timeoutMs, signal).then(() => ({}))
        : t.request('ping', undefined, timeoutMs, signal).then((raw) => bounded('ping', raw));
    case 'logging/setLevel':
      if (!t.capabilities.logging) return undeclared(op.method, 'logging');
      if (!LOGGING_LEVELS.includes(op.level)) return notRun(`logging/setLevel: level must be one of ${LOGGING_LEVELS.join(', ')}`);
      if (t.era === 'modern') {
        t.setLogLevel(op.level);
        return Promise.resolve({});
      }
      return t.request(op.method, { level: op.level }, timeoutMs, signal).then(() => {
        t.asked.level = op.level;
        return {};
      });
    case 'completion/complete': {
      if (!t.capabilities.completions) return undeclared(op.method, 'completions');
      let params: Raw;
      try {
        params = completionParams(op);
      } catch (err) {
        return Promise.reject(err);
      }
      return t.request(op.method, params, timeoutMs, signal).then(checkCompletion);
    }
    case 'resources/subscribe':
    case 'resources/unsubscribe': {
      if (!t.capabilities.resources?.subscribe) return undeclared(op.method, 'resources.subscribe');
      if (typeof op.uri !== 'string' || !op.uri) return notRun(`${op.method} needs \`uri\`, a non-empty string`);
      const on = op.method === 'resources/subscribe';
      const uri = op.uri;
      const holder = typeof op.holder === 'string' ? op.holder : '';
      // Another session of a shared connection holds it still (or holds it already): nothing to ask the server.
      if (!t.asked.changes(uri, holder, on)) {
        t.asked.hold(uri, holder, on);
        return Promise.resolve({});
      }
      const asked = t.era === 'modern' ? t.listenTo(uri, on) : t.request(op.method, { uri }, timeoutMs, signal);
      return asked.then(() => {
        t.asked.hold(uri, holder, on);
        if (on) t.asked.uris.add(uri);
        else t.asked.uris.delete(uri);
        return {};
      });
    }
    default: {
      const why = `unknown operation ${(op as { method: string }).method}`;
      return Promise.reject(new AlbedoError('ALBEDO_INVALID_ARGUMENT', why, { outcome: 'not_run' }));
    }
  }
}

/**
 * A tools/call refused with HeaderMismatch (-32020) did not run: as the
 * spec advises, the tool list is fetched again (the tool's x-mcp-header
 * annotations may have changed) and the call is sent once more.
 */
async function callTool(t: OpTarget, params: Raw, timeoutMs: number, signal?: AbortSignal): Promise<Raw> {
  const deadline = Date.now() + timeoutMs;
  try {
    return await t.request('tools/call', params, timeoutMs, signal);
  } catch (err) {
    if (wireCodeOf(err) !== ErrorCode.HeaderMismatch || Date.now() >= deadline) throw err;
    await listAll(t.lister, 'tools/list', Math.max(1, deadline - Date.now()), [], signal);
    return t.request('tools/call', params, Math.max(1, deadline - Date.now()), signal);
  }
}

const checkToolResult = (raw: Raw): unknown => checked(callToolResultSchema, 'tools/call', raw, callToolResultFast);

/**
 * `raw` within the depth bound and valid for `schema`, as the schema parses it.
 * `fast` gives the schema's verdict for the plain results it is sure of, else zod does.
 */
function checked<T>(schema: z.ZodType<T>, method: string, raw: Raw, fast?: (raw: Raw) => T | undefined): T {
  if (depthOf(raw, MAX_DEPTH) > MAX_DEPTH) {
    throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a result nested deeper than ${MAX_DEPTH} levels`, {
      outcome: 'unknown',
    });
  }
  const quick = fast?.(raw);
  if (quick !== undefined) return quick;
  const r = schema.safeParse(raw);
  if (!r.success) throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a malformed result: ${describeZodError(r.error)}`);
  return r.data;
}

/** A result no schema checked (a list's items, a legacy ping) passes the depth bound here. */
function bounded(method: string, result: unknown): unknown {
  if (depthOf(result, MAX_DEPTH + 2) > MAX_DEPTH + 2) {
    throw new AlbedoError('ALBEDO_INVALID_RESPONSE', `${method} returned a result nested deeper than ${MAX_DEPTH} levels`, {
      outcome: 'unknown',
    });
  }
  return result;
}
