/**
 * The legacy era's extra streams over Streamable HTTP (2025-03-26 ..
 * 2025-11-25): resuming a broken SSE response with `Last-Event-ID`, and the
 * optional GET stream for server messages unrelated to a request. Both run
 * on the link's pool and report through the link (`LegacyHost`).
 */
import { request as undiciRequest, type Dispatcher } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import type { RequestId } from '../../protocol/jsonrpc.ts';
import { contentType, sleep } from './http-util.ts';
import { readSse, newStreamState, type StreamState, type SseSink } from './sse-reader.ts';

/** SSE resumption: the server's `retry`, else 250 ms, never above 30 s; five empty resumptions in a row give up. */
const RESUME_DEFAULT_MS = 250;
const RESUME_MAX_MS = 30_000;
const RESUME_EMPTY_LIMIT = 5;
/** The GET stream: reopened after `retry` or 1 s doubling to 60 s; eight silent attempts in a row give up. */
const GET_BACKOFF_MIN_MS = 1_000;
const GET_BACKOFF_MAX_MS = 60_000;
const GET_SILENT_LIMIT = 8;

/** One request in flight on the link, as the legacy streams see it. */
export interface LegacyRequest {
  id: RequestId;
  method: string;
  ac: AbortController;
  answered: boolean;
  dropped: boolean;
}

/** What the link lends these streams. */
export interface LegacyHost {
  readonly url: URL;
  readonly agent: Dispatcher;
  readonly sessionId: string | undefined;
  readonly closed: boolean;
  /** Headers for a GET (session id, version, auth), with `Last-Event-ID` when given. */
  getHeaders(lastEventId: string | undefined): Promise<Record<string, string>>;
  deliver(message: unknown, raw: string): void;
  warn(message: string): void;
  quote(text: string, max: number): string;
  fail(f: LegacyRequest, err: AlbedoError): void;
  /** Ends the link (the session is gone). */
  shutdown(err: AlbedoError): void;
}

/** What an SSE stream read for the link may do: deliver, warn, quote the server's text. */
const sinkOf = (host: LegacyHost): SseSink => ({
  deliver: (m, raw) => host.deliver(m, raw),
  warn: (m) => host.warn(m),
  quote: (t, n) => host.quote(t, n),
});

const broken = (f: LegacyRequest, why: string, data?: unknown): AlbedoError =>
  new AlbedoError('ALBEDO_STREAM_BROKEN', `${f.method}: ${why}; the outcome is unknown`, { outcome: 'unknown', data });

/**
 * A legacy SSE response broke before its response: resume it with GET and
 * Last-Event-ID after `retry`, until the response arrives, the request is
 * given up (timeout: the link aborts `f.ac`), or five resumptions in a row
 * bring nothing new. A stream without event ids cannot be resumed.
 */
export async function resumeResponse(host: LegacyHost, f: LegacyRequest, state: StreamState): Promise<void> {
  if (state.lastEventId === undefined) {
    host.fail(f, broken(f, 'the response stream ended before the response arrived and carried no event ids to resume from'));
    return;
  }
  const sink = sinkOf(host);
  let empty = 0;
  while (!f.answered && !f.dropped && !host.closed) {
    await sleep(Math.min(state.retryMs ?? RESUME_DEFAULT_MS, RESUME_MAX_MS), f.ac.signal);
    if (f.dropped || host.closed) return;
    const before = state.lastEventId;
    try {
      const headers = await host.getHeaders(state.lastEventId);
      const res = await undiciRequest(host.url, { method: 'GET', headers, dispatcher: host.agent, signal: f.ac.signal });
      if (res.statusCode === 404 && host.sessionId) {
        res.body.destroy();
        const why = `${f.method}: the session ended while its response stream was being resumed; the outcome is unknown`;
        const err = new AlbedoError('ALBEDO_SESSION_EXPIRED', why, { outcome: 'unknown' });
        host.fail(f, err);
        host.shutdown(err);
        return;
      }
      if (res.statusCode < 200 || res.statusCode >= 300 || contentType(res.headers) !== 'text/event-stream') {
        const status = res.statusCode;
        res.body.destroy();
        host.fail(f, broken(f, `the response stream broke and resuming it was refused (HTTP ${status})`, { status }));
        return;
      }
      await readSse(res.body, state, f.ac.signal, sink, () => f.answered || f.dropped);
    } catch (err) {
      if (f.dropped) return;
      if (AlbedoError.is(err) && err.code === 'ALBEDO_FRAME_TOO_LARGE') return host.fail(f, err);
      // A failed resumption counts as one that brought nothing.
    }
    empty = state.lastEventId === before ? empty + 1 : 0;
    if (empty >= RESUME_EMPTY_LIMIT && !f.answered) {
      host.fail(f, broken(f, `the response stream broke and ${RESUME_EMPTY_LIMIT} resumptions in a row brought nothing new`));
      return;
    }
  }
}

/**
 * The optional GET stream. 405 or any refusal leaves it closed for the
 * link's life; a dropped stream reopens after the server's `retry`, or after
 * a wait that doubles from 1 s to 60 s, and is given up after eight silent
 * attempts. `answered` is called once the first GET is answered (open or
 * refused), so that a server which sends its requests only there finds it.
 */
export async function holdGetStream(host: LegacyHost, g: { ac: AbortController; stopped: boolean }, answered: () => void): Promise<void> {
  const state = newStreamState();
  const sink = sinkOf(host);
  let silent = 0;
  let backoff = GET_BACKOFF_MIN_MS;
  let everOpened = false;
  while (!g.stopped && !host.closed) {
    state.sawEvent = false;
    try {
      const headers = await host.getHeaders(state.lastEventId);
      const res = await undiciRequest(host.url, { method: 'GET', headers, dispatcher: host.agent, signal: g.ac.signal });
      answered();
      const ok = res.statusCode >= 200 && res.statusCode < 300 && contentType(res.headers) === 'text/event-stream';
      if (!ok) {
        const status = res.statusCode;
        await res.body.dump().catch(() => {});
        if (status === 404 && host.sessionId) {
          const why = `the server no longer knows our session (HTTP 404); the next request connects again`;
          host.shutdown(new AlbedoError('ALBEDO_SESSION_EXPIRED', why, { outcome: 'not_run' }));
          return;
        }
        // 405 (no GET stream offered) or another refusal: closed for the link's life.
        if (!everOpened || status === 405) return;
        silent++;
      } else {
        everOpened = true;
        await readSse(res.body, state, g.ac.signal, sink);
        if (state.sawEvent) {
          silent = 0;
          backoff = GET_BACKOFF_MIN_MS;
        } else silent++;
      }
    } catch {
      if (g.stopped || host.closed) return;
      if (!everOpened) return;
      silent++;
    }
    if (silent >= GET_SILENT_LIMIT) {
      host.warn(`the server's GET event stream dropped ${GET_SILENT_LIMIT} times in a row without sending anything; it stays closed`);
      return;
    }
    const wait = state.retryMs !== undefined ? Math.min(state.retryMs, GET_BACKOFF_MAX_MS) : backoff;
    if (state.retryMs === undefined) backoff = Math.min(backoff * 2, GET_BACKOFF_MAX_MS);
    await sleep(wait, g.ac.signal);
  }
}
