/**
 * Small helpers of the HTTP link: header look-ups, capped body reads, and
 * network errors described for people. No state.
 */
import type { Dispatcher } from 'undici';
import { AlbedoError } from '../../protocol/errors.ts';
import { redact, redactThenCut, type Secrets } from '../../protocol/redact.ts';
import { mayPass } from '../../protocol/services/transport.ts';

export type Headers = Record<string, string | string[] | undefined>;

/** One header's first value. */
export function headerOf(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The media type of a response, lower-cased, without parameters. */
export function contentType(headers: Headers): string {
  return (headerOf(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Reads a body as UTF-8, failing past `limit` bytes (or, with `truncate`, stopping there). */
export async function readCapped(body: Dispatcher.ResponseData['body'], limit: number, truncate = false): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limit) {
      if (truncate) {
        chunks.push(b.subarray(0, b.length - (size - limit)));
        body.destroy();
        break;
      }
      body.destroy();
      throw new AlbedoError('ALBEDO_FRAME_TOO_LARGE', `a response body exceeded the ${limit}-byte cap`, { outcome: 'unknown' });
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A body excerpt for an error message: every secret cut out of the whole
 * body first (before white space is folded: a secret may hold some), then
 * white space folded and at most 200 characters kept, a secret the cut broke
 * dropped (protocol/redact.ts). `cut`: the body was read only so far.
 */
export function excerptOf(text: string, secrets: Secrets = [], cut = false): string {
  const folded = redact(text, secrets).replace(/\s+/g, ' ').trim();
  return redactThenCut(folded, secrets, { keep: 'head', max: 200, cut });
}

/** undici's errors nest the socket's: say the useful part, with its code. */
export function describeNetError(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.cause?.code ?? e?.code;
  const msg = e?.cause?.message ?? e?.message ?? String(err);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** The three HTTP-date forms (RFC 9110 §5.6.7): IMF-fixdate, RFC 850, asctime (which is GMT without saying so). */
const IMF_DATE = new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`);

/**
 * A response's `Retry-After` (RFC 9110 §10.2.3) as milliseconds from `now`: delta-seconds, or an HTTP-date (one
 * already past is 0). Absent, invalid, or several values that differ: undefined.
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const raw = headers['retry-after'];
  const values = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).map((v) => v.trim());
  if (values.length === 0 || values.some((v) => v !== values[0])) return undefined;
  const v = values[0]!;
  if (/^\d{1,15}$/.test(v)) return Number(v) * 1000;
  let at = NaN;
  if (IMF_DATE.test(v) || RFC850_DATE.test(v)) at = Date.parse(v);
  else if (ASCTIME_DATE.test(v)) at = Date.parse(`${v} GMT`);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** A failed exchange's data: its status and body excerpt, and the server's Retry-After when the status may pass. */
export function statusData(status: number, body: string, headers: Headers): { status: number; body: string; retryAfterMs?: number } {
  const hint = mayPass(status) ? retryAfterMs(headers) : undefined;
  return hint === undefined ? { status, body } : { status, body, retryAfterMs: hint };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The value at `path` inside a tool call's arguments; undefined where a step is missing or not a plain object. */
export function valueAt(args: Record<string, unknown>, path: string[]): unknown {
  let v: unknown = args;
  for (const k of path) {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}
