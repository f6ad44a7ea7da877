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
 * message may quote a server).
 */
export function errorLine(err: unknown): string {
  if (err instanceof CliError) {
    const where = err.path?.length ? ` (at ${err.path.join('.')})` : '';
    return safe(`albedo: ${err.code}: ${oneLine(err.message)}${where}`);
  }
  return safe(`albedo: ALBEDO_INTERNAL: ${oneLine(err instanceof Error ? err.message : String(err))}`);
}

/** Folds line breaks (a server's quoted stderr) so a message stays one line. */
export function oneLine(s: string): string {
  return s.replace(/\s*[\r\n]+\s*/g, ' | ').trim();
}
