/**
 * The CLI's exit statuses and its one error type. Every failure of a
 * command that talks to the daemon ends as one line on stderr,
 * `albedo: <code>: <message>`, and one of these statuses; the codes are the
 * API's (`ALBEDO_*`, stable) or the few the CLI has of its own.
 */
import { safe } from './output.ts';

/** Exit statuses of the commands that talk to the daemon (docs/cli.md). Stable. */
export const EXIT = {
  ok: 0,
  /** The request was refused or failed (a strict save refused, a server error, a timeout). */
  failed: 1,
  /** Bad usage: the command line, or a value the daemon refused as invalid (400). */
  usage: 2,
  /** No daemon could be reached or started. */
  unreachable: 3,
  /** No such server, session or tool (404). */
  notFound: 4,
  /** The server needs a sign-in first (ALBEDO_NEEDS_SIGN_IN). */
  needsSignIn: 5,
  /** `albedo call`: the tool ran and reported an error (isError). */
  toolError: 6,
  /** $ALBEDO_HOME, or a directory on the way to it, is not this user's alone (ALBEDO_HOME_UNSAFE): nothing in it was read. */
  unsafeHome: 7,
} as const;
export type ExitStatus = (typeof EXIT)[keyof typeof EXIT];

/** Codes only the CLI has (the daemon's are the API's, docs/api.md). */
export type CliOwnCode = 'ALBEDO_DAEMON_UNREACHABLE' | 'ALBEDO_HOME_UNSAFE';

/** A failure a command reports: a stable code, a message without secrets, the exit status. */
export class CliError extends Error {
  readonly code: string;
  readonly exit: ExitStatus;
  /** The API's field path, when the daemon named one. */
  readonly path: Array<string | number> | undefined;

  constructor(code: string, message: string, exit: ExitStatus, path?: Array<string | number>) {
    super(message);
    this.name = 'CliError';
    this.code = code;
    this.exit = exit;
    this.path = path;
  }
}

/** A usage error (exit 2), as the CLI reports its own. */
export function usage(message: string): CliError {
  return new CliError('ALBEDO_INVALID_ARGUMENT', message, EXIT.usage);
}

/** The exit status for an API error of `status` with `code`. */
export function exitFor(status: number, code: string): ExitStatus {
  if (code === 'ALBEDO_NEEDS_SIGN_IN') return EXIT.needsSignIn;
  if (status === 400 || status === 415) return EXIT.usage;
  if (status === 404) return EXIT.notFound;
  return EXIT.failed;
}

/**
 * The one stderr line of an error: `albedo: <code>: <message>` (line breaks
 * folded, so it stays one line; control characters shown, not obeyed: the
 * message may quote a server). The message is the one a person reads
 * (forPerson): the field the daemon named by its API path is called what was
 * typed (`--url`, `env TOKEN`), and no protocol method is named; the code and
 * the path stay exact in `err.code` and `err.path` for a program.
 */
export function errorLine(err: unknown): string {
  if (err instanceof CliError) return safe(`albedo: ${err.code}: ${forPerson(err.message, err.path, err.code)}`);
  return safe(`albedo: ALBEDO_INTERNAL: ${forPerson(err instanceof Error ? err.message : String(err))}`);
}

/** Folds line breaks (a server's quoted stderr) so a message stays one line. */
export function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' | ').trim();
}

// Where an API path starts: the part of the request, not a field a person typed.
const LOCATIONS = new Set(['body', 'params', 'query', 'headers']);
// An entry's fields as `albedo mcp add` and `edit` take them.
const FLAGS: Record<string, string> = {
  url: '--url',
  command: '--command',
  cwd: '--cwd',
  bearerTokenEnvVar: '--bearer-env',
  startupTimeoutMs: '--startup-timeout',
  callTimeoutMs: '--call-timeout',
};

/**
 * What a person typed for the field at the API's `path`: `--url`, `env
 * TOKEN`, `header X-Key`, `the bearer token`, `oauth.clientId` (a field of
 * extensions.json, as written there); undefined for a path parameter (the
 * message names the server, sign-in or session itself). `flags` false: an
 * entry's own words (`url`, `cwd`) rather than the options of `mcp add`,
 * for a problem of a saved server, however it was written.
 */
export function fieldWords(path: ReadonlyArray<string | number>, flags = true): string | undefined {
  const at = String(path[0]);
  if (at === 'params' || at === 'query') return undefined;
  const p = LOCATIONS.has(at) ? path.slice(1) : [...path];
  const [a, b, c] = p;
  if (!p.length) return undefined;
  if (a === 'secrets') {
    if (b === 'bearer' || b === 'bearerToken') return 'the bearer token';
    if (b === 'env' && c !== undefined) return `env ${c}`;
    if (b === 'header') return 'header';
    if (b === 'oauth_client' || b === 'oauthClient') return 'the OAuth client';
    if (b === 'oauth') return 'the sign-in';
  }
  if ((a === 'env' || a === 'headers') && b !== undefined) return `${a === 'env' ? 'env' : 'header'} ${b}`;
  if (a === 'args' && typeof b === 'number') return `argument ${b + 1} of the command`;
  if (flags && p.length === 1 && typeof a === 'string' && Object.hasOwn(FLAGS, a)) return FLAGS[a];
  return p.join('.');
}

// A method of the protocol leading a reason (`server/discover: cannot reach …`): the step, in MCP's words, not the person's.
const METHODS = [
  'server/discover',
  'initialize',
  'ping',
  '(?:tools|prompts|resources|resources/templates)/(?:list|call|get|read)',
  'completion/complete',
  'logging/setLevel',
  'notifications/[\\w/]+',
];
const METHOD = new RegExp(`(^|: )(?:${METHODS.join('|')}): `, 'g');
// A line of another albedo process quoted inside a message (a daemon's log): its own prefix is not said again.
const QUOTED_PREFIX = /(^|: )albedo(?: daemon| probe)?: (?:ALBEDO_[A-Z_]+: )?/g;
const escaped = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A message as a person reads it, on one line: the field the daemon named by
 * its place in the request (`url: …`, `env.TOKEN: …`) called what was typed
 * (`--url "ftp://x" must be…`, `env TOKEN: …`; fieldWords), no protocol
 * method named, no `albedo:` prefix of a quoted line, and not the code again
 * when the message only restates it.
 */
export function forPerson(message: string, path?: ReadonlyArray<string | number>, code?: string, flags = true): string {
  let m = oneLine(message).replace(METHOD, '$1').replace(QUOTED_PREFIX, '$1');
  const field = path?.length ? fieldWords(path, flags) : undefined;
  if (path && field !== undefined) {
    const dotted = (LOCATIONS.has(String(path[0])) ? path.slice(1) : path).join('.');
    // `url: "ftp://x" must be …` → `--url "ftp://x" must be …`; `env.TOKEN: …` → `env TOKEN: …`.
    const at = new RegExp(`(^|: )${escaped(dotted)}(?:(: )(?=")|(?=[: ]|$))`);
    m = m.replace(at, (_all, lead: string, quoted?: string) => `${lead}${field}${quoted ? ' ' : ''}`);
  }
  return saidOnce(m, code);
}

const norm = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();

/**
 * `m` without a part that only repeats the one before it (`server not found:
 * not found`), nor, first, one that only repeats the code (`ALBEDO_NOT_FOUND:
 * not found: …`).
 */
function saidOnce(m: string, code?: string): string {
  const kept: string[] = [];
  for (const part of m.split(': ')) {
    const last = kept.length ? norm(kept[kept.length - 1]!) : undefined;
    const p = norm(part);
    if (last !== undefined && p && (last === p || last.endsWith(` ${p}`))) continue;
    kept.push(part);
  }
  const said = code ? norm(code.replace(/^ALBEDO_/, '')) : undefined;
  if (kept.length > 1 && norm(kept[0]!) === said) kept.shift();
  return kept.join(': ');
}
