/**
 * The HTTP API's errors: `{ error: { code, message, path?, outcome? } }`
 * with a stable `code` — the AlbedoError codes of protocol/errors.ts where
 * one fits, and the few below that only HTTP has. Nothing else of an error
 * reaches a response: no stack, no `data` (which may hold a server's
 * stderr), no cause. Messages of AlbedoErrors never hold a secret value
 * (protocol rule); anything else thrown becomes ALBEDO_INTERNAL with a fixed
 * message.
 */
import type { z } from 'zod';
import { AlbedoError, type AlbedoErrorCode, type Outcome } from '../protocol/errors.ts';

/** Codes only the HTTP layer has. */
export const HTTP_ERROR_CODES = [
  /** No `Authorization: Bearer <token>`, or not the daemon's token (401). */
  'ALBEDO_UNAUTHORIZED',
  /** The `Host` (or an absolute request URL) is not a loopback name with the daemon's port (421): DNS rebinding. */
  'ALBEDO_BAD_HOST',
  /** An `Origin` that is not the daemon's own (403): a web page of another site. */
  'ALBEDO_BAD_ORIGIN',
  /** `If-Match` names another version than the current one, or `If-None-Match: *` met an existing resource (412). */
  'ALBEDO_PRECONDITION_FAILED',
  /** The request body is over the limit (413). */
  'ALBEDO_TOO_LARGE',
  /** A change by the web pane's cookie without its session's `X-Albedo-CSRF` (403). */
  'ALBEDO_CSRF',
  /** A method the web pane's files or its login do not answer (405). */
  'ALBEDO_METHOD_NOT_ALLOWED',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];
export type ApiErrorCode = AlbedoErrorCode | HttpErrorCode;

/** Where in the request a path starts: the body, the path parameters, the query, a header. */
export type Location = 'body' | 'params' | 'query' | 'headers';
export type FieldPath = Array<string | number>;

export interface ErrorBody {
  error: { code: ApiErrorCode; message: string; path?: FieldPath; outcome?: Outcome };
}

/** An error the API answers with: a status and the body's fields. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly path: FieldPath | undefined;
  readonly outcome: Outcome | undefined;

  constructor(status: number, code: ApiErrorCode, message: string, opts: { path?: FieldPath; outcome?: Outcome } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.path = opts.path;
    this.outcome = opts.outcome;
  }

  body(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.path) error.path = this.path;
    if (this.outcome) error.outcome = this.outcome;
    return { error };
  }
}

/** The status an AlbedoError code answers with outside a strict save. */
export function statusOf(code: AlbedoErrorCode): number {
  switch (code) {
    case 'ALBEDO_INVALID_ARGUMENT':
    case 'ALBEDO_INVALID_CONFIG':
      return 400;
    case 'ALBEDO_NOT_FOUND':
      return 404;
    case 'ALBEDO_EDIT_CONFLICT':
    case 'ALBEDO_OVERLAY_FAILED':
    case 'ALBEDO_OVERLAY_RELOAD_PENDING':
    case 'ALBEDO_OVERLAY_REATTACH_REQUIRED':
    case 'ALBEDO_ATTACHMENT_HELD':
    case 'ALBEDO_ATTACHMENT_LOST':
      return 409;
    case 'ALBEDO_OVERLAY_RELOAD_FAILED':
    case 'ALBEDO_OVERLAY_UNCERTAIN':
      return 503;
    case 'ALBEDO_CLOSED':
    case 'ALBEDO_SERVICE_LOST':
    case 'ALBEDO_SERVICE_FAILED':
    case 'ALBEDO_SERVICE_UNKNOWN':
    case 'ALBEDO_OVERLOADED':
      return 503;
    case 'ALBEDO_DEADLINE':
    case 'ALBEDO_TIMEOUT':
      return 504;
    default:
      return 500;
  }
}

/**
 * The path an AlbedoError names: `data.issues[0].path` (the settings
 * service's validation) or `data.path` (a resolve problem), under `prefix`.
 * Typed secrets are spelled as the API spells them.
 */
export function pathOf(err: AlbedoError, prefix: FieldPath = ['body']): FieldPath | undefined {
  const d = err.data as { issues?: Array<{ path?: unknown }>; path?: unknown } | undefined;
  const p = Array.isArray(d?.issues) ? d.issues[0]?.path : d?.path;
  if (!Array.isArray(p)) return undefined;
  return [...prefix, ...p.map((s) => (typeof s === 'string' ? apiName(s) : s) as string | number)];
}

/** The settings service's names of typed-secret fields → the API's. */
const API_NAMES: Record<string, string> = {
  bearerToken: 'bearer',
  oauthClient: 'oauth_client',
  clientId: 'client_id',
  clientSecret: 'client_secret',
};
function apiName(s: string): string {
  return Object.hasOwn(API_NAMES, s) ? API_NAMES[s]! : s;
}

/** Anything thrown by a handler, as an ApiError. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (AlbedoError.is(err)) return new ApiError(statusOf(err.code), err.code, err.message, { path: pathOf(err), outcome: err.outcome });
  return new ApiError(500, 'ALBEDO_INTERNAL', 'internal error in the daemon');
}

/**
 * A zod failure of one request part as a 400 with the field's path. A
 * union's failure names the branch that got furthest (fewest issues), so
 * `path` points into the variant the caller meant. A record's key refused
 * says why (its key's own issue, not "Invalid key in record"). `names`:
 * fields whose value is a name, not a secret (a typed header's name), said
 * in the message as given (`secrets.header.name "Host": …`).
 */
export function validationError(where: Location, error: z.ZodError, input?: unknown, names: ReadonlyArray<string> = []): ApiError {
  const issue = deepest(error.issues);
  const path: FieldPath = [where, ...issue.path.map((s) => (typeof s === 'symbol' ? String(s) : s))];
  // An unknown field is named by its key, not by the object holding it.
  if (issue.code === 'unrecognized_keys' && issue.keys.length) path.push(issue.keys[0]!);
  const why = issue.code === 'invalid_key' && issue.issues[0] ? issue.issues[0].message : issue.message;
  let field = path.slice(1).join('.') || where;
  const value = names.includes(field) ? valueAt(input, path.slice(1)) : undefined;
  if (typeof value === 'string') field += ` ${JSON.stringify(value)}`;
  return new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', `${field}: ${why}`, { path });
}

/** The value at `path` in `v`, own keys only. */
function valueAt(v: unknown, path: FieldPath): unknown {
  for (const k of path) {
    if (typeof v !== 'object' || v === null || !Object.hasOwn(v, k)) return undefined;
    v = (v as Record<string | number, unknown>)[k];
  }
  return v;
}

type Issue = z.core.$ZodIssue;
function deepest(issues: readonly Issue[]): Issue {
  const first = issues[0]!;
  if (first.code !== 'invalid_union' || !first.errors.length) return first;
  const branch = first.errors.reduce((a, b) => (b.length < a.length ? b : a));
  if (!branch.length) return first;
  const inner = deepest(branch);
  return { ...inner, path: [...first.path, ...inner.path] };
}
