/**
 * One HTTP request to the daemon on 127.0.0.1, with its bearer token, over
 * node:http (no client library to load: the CLI's start-up is the budget).
 * A non-2xx answer becomes a CliError with the API's stable code, message
 * and field path; a connection that cannot be made is a ConnectFailed, so
 * that the caller can start a daemon and try again.
 */
import { createRequire } from 'node:module';
import type { IncomingHttpHeaders } from 'node:http';
import { CliError, EXIT, exitFor } from './errors.ts';

// Required, not imported: an ESM import of node:http reads every export, and its lazy WebSocket/EventSource getters
// load Node's bundled undici (10-15 ms of the CLI's start-up for nothing).
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export interface Endpoint {
  port: number;
  token: string;
}

export interface Reply<T = any> {
  status: number;
  headers: IncomingHttpHeaders;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Gives up after this long (default: 10 minutes, longer than any strict save's start-up timeout). */
  timeoutMs?: number;
  /** Answers with these statuses are returned, not thrown (e.g. 404 to tell "no route" from "no server"). */
  accept?: number[];
  /** Sends no token: for `GET /v1/health`, asked before the answering process has proved it is the daemon. */
  anonymous?: boolean;
  /** An answer longer than this is cut off (ALBEDO_INVALID_RESPONSE): for a process not yet proved to be the daemon. */
  maxBytes?: number;
}

/** The daemon was not there: nothing listens on the port, or the connection was cut before any answer. */
export class ConnectFailed extends Error {
  readonly errno: string | undefined;
  constructor(errno: string | undefined) {
    super(`cannot reach the daemon (${errno ?? 'no answer'})`);
    this.name = 'ConnectFailed';
    this.errno = errno;
  }
}

const DEFAULT_TIMEOUT_MS = 600_000;

/** Sends one request; resolves with the parsed JSON answer (undefined for an empty body). */
export function request<T = any>(ep: Endpoint, method: string, path: string, o: RequestOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
  if (!o.anonymous) headers.authorization = `Bearer ${ep.token}`;
  let payload: Buffer | undefined;
  if (o.body !== undefined) {
    payload = Buffer.from(JSON.stringify(o.body));
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port: ep.port, method, path, headers, agent: false }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (o.maxBytes !== undefined && size > o.maxBytes) {
          reject(
            new CliError('ALBEDO_INVALID_RESPONSE', `the answer to ${method} ${path} is longer than ${o.maxBytes} bytes`, EXIT.failed),
          );
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      res.on('error', (err) =>
        reject(new CliError('ALBEDO_CONNECTION_CLOSED', `the daemon's answer was cut off: ${err.message}`, EXIT.failed)),
      );
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          return reject(
            new CliError('ALBEDO_INVALID_RESPONSE', `the daemon answered ${res.statusCode} with a body that is not JSON`, EXIT.failed),
          );
        }
        const status = res.statusCode ?? 0;
        if ((status >= 200 && status < 300) || o.accept?.includes(status)) return resolve({ status, headers: res.headers, body });
        reject(apiError(status, body));
      });
    });
    req.setTimeout(o.timeoutMs ?? DEFAULT_TIMEOUT_MS, () => {
      req.destroy(new CliError('ALBEDO_TIMEOUT', `the daemon did not answer ${method} ${path} in time`, EXIT.failed));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof CliError) return reject(err);
      // Refused or reset before any answer: nothing (or nothing alive) listens there.
      if (!answered && ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH'].includes(err.code ?? ''))
        return reject(new ConnectFailed(err.code));
      reject(new CliError('ALBEDO_CONNECTION_CLOSED', `the request to the daemon failed: ${err.message}`, EXIT.failed));
    });
    req.end(payload);
  });
}

/** The API's error body as a CliError (docs/api.md "Errors"). */
export function apiError(status: number, body: any): CliError {
  const e = body?.error;
  if (e && typeof e.code === 'string' && typeof e.message === 'string') {
    return new CliError(e.code, e.message, exitFor(status, e.code), Array.isArray(e.path) ? e.path : undefined);
  }
  return new CliError('ALBEDO_INVALID_RESPONSE', `the daemon answered ${status} without an error body`, EXIT.failed);
}

/** A path segment, encoded (a server name may hold `/`). */
export const seg = (s: string): string => encodeURIComponent(s);
