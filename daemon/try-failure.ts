/**
 * Why a strict save's try failed, in a person's words (strict-save.ts):
 * "did not answer within 30 s", "exited with status 1", "refused the
 * connection", "answered with HTTP status 503" — not the protocol's
 * requests (`server/discover`, `initialize`), which the transport's own
 * message names — then the last lines the server wrote on stderr
 * (bounded). The error's code stays the transport's. Pure: the caller cuts
 * the secrets out of the whole text.
 */
import type { AlbedoError } from '../protocol/errors.ts';
import type { ResolvedServer } from '../protocol/config.ts';

/** At most this many of the server's last stderr lines are quoted, each at most LINE_CHARS long. */
export const TAIL_LINES = 8;
const LINE_CHARS = 240;

type Data = {
  timeoutMs?: unknown;
  exit?: unknown;
  signal?: unknown;
  status?: unknown;
  body?: unknown;
  errno?: unknown;
  stderrTail?: unknown;
  stdoutJunk?: { lines?: unknown; first?: unknown };
};

/** `ms` for a person: "30 s", "1.5 s", "800 ms". */
export function duration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  return `${Number((ms / 1_000).toFixed(1))} s`;
}

/** What happened, as one sentence about `name` (no trailing stop). */
function what(name: string, err: AlbedoError, server: ResolvedServer, d: Data): string {
  const where = server.type === 'http' ? new URL(server.url).origin : '';
  switch (err.code) {
    case 'ALBEDO_TIMEOUT': {
      const ms = typeof d.timeoutMs === 'number' ? d.timeoutMs : server.startupTimeoutMs;
      return `${name} did not answer within ${duration(ms)}`;
    }
    case 'ALBEDO_SERVER_EXITED':
      if (d.signal === 'launcher-exited') return `${name} stopped: the stdio launcher that runs it died`;
      if (typeof d.signal === 'string') return `${name} was killed by ${d.signal} before it answered`;
      if (typeof d.exit === 'number') return `${name} exited with status ${d.exit} before it answered`;
      return `${name} closed its output before it answered`;
    case 'ALBEDO_SPAWN_FAILED':
      // The transport's words already say it plainly: `cannot start "nodee": No such file or directory`.
      return `${name}: ${err.message}`;
    case 'ALBEDO_CONNECTION_CLOSED':
      if (d.errno === 'ECONNREFUSED') return `${where} refused the connection (nothing listens there)`;
      if (d.errno === 'ENOTFOUND' || d.errno === 'EAI_AGAIN') return `the host of ${where} was not found`;
      if (d.errno === 'UND_ERR_CONNECT_TIMEOUT') return `${where} did not accept the connection in time`;
      return `${name} could not be reached${where ? ` at ${where}` : ''}`;
    case 'ALBEDO_STREAM_BROKEN':
      return `the connection to ${where || name} broke before it answered`;
    case 'ALBEDO_HTTP_ERROR': {
      const body = typeof d.body === 'string' && d.body.trim() ? `: ${d.body.trim()}` : '';
      return `${where || name} answered with HTTP status ${typeof d.status === 'number' ? d.status : '?'}${body}`;
    }
    case 'ALBEDO_FRAME_TOO_LARGE':
      return `${name} sent a message larger than Albedo accepts`;
    case 'ALBEDO_ERA_REFUSED':
    case 'ALBEDO_CATALOGUE_TOO_LARGE':
      return `${name} answered, but ${err.message}`;
    default:
      // The handshake itself went wrong (a malformed answer, a refusal): its requests are the substance, so named.
      return `${name} answered, but not as an MCP server Albedo can use: ${err.message}`;
  }
}

/** A stack frame of a JavaScript error (`    at f (file:1:2)`): what a crash prints after the line that says why. */
const FRAME = /^\s+at\s/;

/**
 * The last `n` lines of `tail` (blank ones dropped), each cut to
 * LINE_CHARS; when there are more, stack frames go first, so a crash's
 * message is not pushed out by its frames.
 */
export function lastLines(tail: string, n = TAIL_LINES): string[] {
  let lines = tail
    .split(/\r?\n/)
    .map((l) => l.trimEnd())
    .filter((l) => l.trim());
  if (lines.length > n && lines.some((l) => !FRAME.test(l))) lines = lines.filter((l) => !FRAME.test(l));
  return lines.slice(-n).map((l) => (l.length > LINE_CHARS ? `${l.slice(0, LINE_CHARS - 1)}…` : l));
}

/**
 * The message of a failed try: the sentence, "not saved", and what the
 * server wrote on the side (its last stderr lines; lines on stdout that are
 * not MCP, a common cause of silence), each on its own line.
 */
export function failureMessage(name: string, err: AlbedoError, server: ResolvedServer): string {
  const d: Data = err.data !== null && typeof err.data === 'object' && !Array.isArray(err.data) ? (err.data as Data) : {};
  const parts = [`${what(name, err, server, d)}; it was not saved`];
  const junk = d.stdoutJunk;
  if (junk && typeof junk.lines === 'number' && typeof junk.first === 'string') {
    parts.push(`it wrote ${junk.lines} line(s) on stdout that are not MCP messages (stdout is for MCP only), the first: ${junk.first}`);
  }
  // Where it ran: a relative path in its command or arguments was taken from there.
  if (server.type === 'stdio') parts.push(`its working directory: ${server.cwd}`);
  // A server that never ran (spawn failed) wrote nothing: only one that ran has last words.
  if (server.type === 'stdio' && err.code !== 'ALBEDO_SPAWN_FAILED') {
    const tail = typeof d.stderrTail === 'string' ? lastLines(d.stderrTail) : [];
    parts.push(tail.length ? `its stderr ends:\n${tail.join('\n')}` : 'it wrote nothing on stderr');
  }
  return parts.join('\n');
}
