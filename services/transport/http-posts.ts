/**
 * What the HTTP link sends that is not a request: notifications, and its
 * answers to the server's own requests. Each is a POST the server should
 * accept with 202; nothing waits for it but `notifications/initialized`
 * (notifyAccepted), which must be accepted before any request. The others are
 * sent in the background, at most MAX_BACKGROUND_POSTS at once per link and
 * each for at most BACKGROUND_POST_MS: a refusal, a timeout or a broken
 * connection is a warning, and a legacy session the server forgot ends the
 * link. They run on the link's pool and report through the link (`PostHost`).
 */
import type { Dispatcher } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import { MAX_MESSAGE_BYTES } from '../../protocol/framing.ts';
import { contentType, describeNetError, readCapped, statusData } from './http-util.ts';
import { readSse, newStreamState, type SseSink } from './sse-reader.ts';

/** An error body is read only this far, for the message. */
export const ERROR_BODY_BYTES = 64 * 1024;
/** A notification's or a response's POST gets this long to be accepted (a slowloris answer must not hold a socket forever). */
const BACKGROUND_POST_MS = 30_000;
const MAX_BACKGROUND_POSTS = 64; // in flight per connection

/** What the link lends its posts. */
export interface PostHost {
  readonly sessionId: string | undefined;
  /** How long `notifications/initialized` may take to be accepted (the server's start-up timeout). */
  readonly startupTimeoutMs: number;
  /** The posts in flight in the background, aborted when the link ends. */
  readonly background: Set<AbortController>;
  /** The reader of a stream the server answers with. */
  readonly sink: SseSink;
  /** POSTs `message` with its headers and authorization, again after a challenge the link's authorization answers. */
  post(message: Record<string, unknown>, body: string, signal: () => AbortSignal): Promise<Dispatcher.ResponseData>;
  /** A JSON body's messages, delivered. */
  deliverJson(text: string): void;
  /** An excerpt of an error body for a message, its secrets cut out. */
  excerpt(text: string): string;
  warn(message: string): void;
  /** Ends the link (the session is gone). */
  shutdown(err: AlbedoError): void;
}

/**
 * Sends a notification and resolves once the server accepted it (2xx);
 * rejects with ALBEDO_HTTP_ERROR when it refused. For
 * `notifications/initialized`, which must be accepted before any request.
 */
export async function notifyAccepted(host: PostHost, method: string): Promise<void> {
  const message = { jsonrpc: '2.0', method };
  const res = await host.post(message, JSON.stringify(message), () => AbortSignal.timeout(host.startupTimeoutMs));
  const text = await readCapped(res.body, ERROR_BODY_BYTES, true).catch(() => '');
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const excerpt = host.excerpt(text);
    const why = `the server refused ${method} with HTTP ${res.statusCode}${excerpt ? `: ${excerpt}` : ''}`;
    throw new AlbedoError('ALBEDO_HTTP_ERROR', why, { outcome: 'not_run', data: statusData(res.statusCode, excerpt, res.headers) });
  }
}

/** A notification or a response to the server's request, sent in the background (see the module's comment). */
export async function postInBackground(host: PostHost, message: Record<string, unknown>, body: string): Promise<void> {
  if (host.background.size >= MAX_BACKGROUND_POSTS) {
    // A server that makes us answer faster than it accepts answers gets no more (each holds a socket).
    host.warn(`more than ${MAX_BACKGROUND_POSTS} notifications or responses were waiting for the server; one was dropped`);
    return;
  }
  const ac = new AbortController();
  host.background.add(ac);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, BACKGROUND_POST_MS);
  timer.unref();
  try {
    const res = await host.post(message, body, () => ac.signal);
    const what = typeof message.method === 'string' ? message.method : `the response to request ${JSON.stringify(message.id)}`;
    if (res.statusCode === 404 && host.sessionId) {
      res.body.destroy();
      const why = `the server no longer knows our session (HTTP 404); the next request connects again`;
      host.shutdown(new AlbedoError('ALBEDO_SESSION_EXPIRED', why, { outcome: 'not_run' }));
      return;
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      const text = await readCapped(res.body, ERROR_BODY_BYTES, true).catch(() => '');
      host.warn(`the server refused ${what} with HTTP ${res.statusCode}${text ? `: ${host.excerpt(text)}` : ''}`);
      return;
    }
    // 202 has no body; a server that answers otherwise may still send messages (some do for responses).
    const type = contentType(res.headers);
    if (type === 'text/event-stream') await readSse(res.body, newStreamState(), ac.signal, host.sink);
    else if (type === 'application/json') {
      const text = await readCapped(res.body, MAX_MESSAGE_BYTES);
      if (text.trim()) host.deliverJson(text);
    } else await res.body.dump();
  } catch (err) {
    const what = typeof message.method === 'string' ? message.method : 'a response';
    if (timedOut) host.warn(`the server did not accept ${what} within ${BACKGROUND_POST_MS} ms; gave up on it`);
    else if (!ac.signal.aborted) host.warn(`could not deliver ${what}: ${describeNetError(err)}`);
  } finally {
    clearTimeout(timer);
    host.background.delete(ac);
  }
}
