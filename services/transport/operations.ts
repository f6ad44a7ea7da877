/**
 * The operations a connection runs for its caller (`ClientOp`): a list (all
 * its pages), tools/call, resources/read, prompts/get, ping. Every result is
 * checked against its schema and the depth bound before it is handed back,
 * since a result nested too deep could not even cross to the caller's thread
 * (structured clone recurses). The common call is a chain of two promises: no
 * async function's frame, no await of a settled dial, no zod parse of a plain
 * tools/call result (result-fast-path.ts).
 */
import { AlbedoError } from '../../protocol/errors.ts';
import { ErrorCode } from '../../protocol/jsonrpc.ts';
import { DISCOVER_METHOD } from '../../protocol/rev2026-07-28/index.ts';
import { callToolResultSchema, readResourceResultSchema, getPromptResultSchema } from '../../protocol/mcp.ts';
import { describeZodError } from '../../protocol/config.ts';
import { MAX_DEPTH, depthOf } from '../../protocol/bounds.ts';
import type { ClientOp } from '../../protocol/services/transport.ts';
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
}

/** Runs `op`; rejects with an AlbedoError (never throws). */
export function operate(t: OpTarget, op: ClientOp, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  switch (op.method) {
    case 'tools/call': {
      const params = { name: op.name, arguments: op.arguments ?? {} };
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
        .request(op.method, { uri: op.uri }, timeoutMs, signal)
        .then((raw) => checked(readResourceResultSchema, 'resources/read', raw));
    case 'prompts/get': {
      const params = { name: op.name, arguments: op.arguments ?? {} };
      return t.request(op.method, params, timeoutMs, signal).then((raw) => checked(getPromptResultSchema, 'prompts/get', raw));
    }
    case 'ping':
      // 2026-07-28 removed ping: a modern server's liveness is a server/discover answer.
      return t.era === 'modern'
        ? t.request(DISCOVER_METHOD, undefined, timeoutMs, signal).then(() => ({}))
        : t.request('ping', undefined, timeoutMs, signal).then((raw) => bounded('ping', raw));
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
