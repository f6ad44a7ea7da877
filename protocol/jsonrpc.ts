/**
 * JSON-RPC 2.0 as MCP uses it: the message shapes, their zod schemas, and the
 * error codes both eras define. Types only and pure functions; no I/O.
 */
import { z } from 'zod';

export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: RequestId;
  result: Record<string, unknown>;
}
export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}
export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** Error codes of JSON-RPC 2.0 and of MCP (2025-11-25 and 2026-07-28). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2025-era: a resource that does not exist. */
  ResourceNotFound: -32002,
  /** 2025-era: the server needs the user to answer an elicitation by URL first. */
  UrlElicitationRequired: -32042,
  /** 2026-07-28: a header the spec requires is missing from the HTTP request. */
  HeaderMismatch: -32020,
  /** 2026-07-28: a client capability the request needs was not declared. */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the protocol version is not one the server supports; `data.supported` lists them. */
  UnsupportedProtocolVersion: -32022,
} as const;
export type ErrorCodeName = keyof typeof ErrorCode;

/** The three codes that only a 2026-07-28 server sends; seeing one means the server is modern. */
export const MODERN_ERROR_CODES: ReadonlySet<number> = new Set([
  ErrorCode.HeaderMismatch,
  ErrorCode.MissingRequiredClientCapability,
  ErrorCode.UnsupportedProtocolVersion,
]);

const idSchema = z.union([z.string(), z.number().int()]);
const paramsSchema = z.record(z.string(), z.unknown());

export const requestSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: idSchema,
  method: z.string(),
  params: paramsSchema.optional(),
});
export const notificationSchema = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string(),
  params: paramsSchema.optional(),
});
export const errorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export const successSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: idSchema,
  result: paramsSchema,
});
export const failureSchema = z.object({
  jsonrpc: z.literal('2.0'),
  id: idSchema.nullable(),
  error: errorObjectSchema,
});

export type Classified =
  | { kind: 'request'; message: JsonRpcRequest }
  | { kind: 'notification'; message: JsonRpcNotification }
  | { kind: 'response'; message: JsonRpcResponse }
  | { kind: 'invalid'; reason: string };

/**
 * Classifies one decoded JSON value as a JSON-RPC message, validating it.
 * Never throws: an invalid message says why, so a link can log and skip it.
 */
export function classify(value: unknown): Classified {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { kind: 'invalid', reason: Array.isArray(value) ? 'JSON-RPC batches are not part of MCP' : 'not a JSON object' };
  }
  const v = value as Record<string, unknown>;
  if ('method' in v) {
    if ('id' in v) {
      const r = requestSchema.safeParse(v);
      return r.success
        ? { kind: 'request', message: r.data as JsonRpcRequest }
        : { kind: 'invalid', reason: `bad request: ${r.error.issues[0]?.message}` };
    }
    const n = notificationSchema.safeParse(v);
    return n.success
      ? { kind: 'notification', message: n.data as JsonRpcNotification }
      : { kind: 'invalid', reason: `bad notification: ${n.error.issues[0]?.message}` };
  }
  if ('result' in v) {
    const fast = successFastPath(v);
    if (fast) return fast;
    const r = successSchema.safeParse(v);
    return r.success
      ? { kind: 'response', message: r.data as JsonRpcSuccess }
      : { kind: 'invalid', reason: `bad response: ${r.error.issues[0]?.message}` };
  }
  if ('error' in v) {
    const r = failureSchema.safeParse(v);
    return r.success
      ? { kind: 'response', message: r.data as JsonRpcFailure }
      : { kind: 'invalid', reason: `bad error response: ${r.error.issues[0]?.message}` };
  }
  return { kind: 'invalid', reason: 'neither a request, a notification nor a response' };
}

/**
 * The verdict successSchema gives for a response whose every part is plain
 * (what JSON.parse makes), without running zod: the same message, except that
 * `result` is the object itself, not a copy of it. Undefined for anything
 * else, which zod then judges (and explains) as before: a non-integer or
 * unsafe id, a `result` that is not a plain object, or one with an own
 * `__proto__` key (which zod's copy drops). Every reply takes this path, and
 * zod's copy of the result was the largest allocation of a call.
 */
function successFastPath(v: Record<string, unknown>): Classified | undefined {
  const id = v.id;
  const result = v.result;
  if (v.jsonrpc !== '2.0' || !(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) return undefined;
  if (!isPlainData(result) || Object.hasOwn(result, '__proto__')) return undefined;
  return { kind: 'response', message: { jsonrpc: '2.0', id, result } };
}

/**
 * An object zod's isPlainObject accepts for certain: its prototype is
 * Object.prototype and it has no `constructor` of its own (JSON.parse makes
 * only such objects).
 */
export function isPlainData(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && Object.getPrototypeOf(x) === Object.prototype && !Object.hasOwn(x, 'constructor');
}
