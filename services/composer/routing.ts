/**
 * From what the model (or a caller) named to one MCP operation: an
 * advertised name or `server/tool` is resolved through the generation's
 * routing table (catalogue/definitions.ts `resolveCall`, never by splitting
 * names); a tool becomes tools/call, read_resource becomes resources/read
 * and get_prompt becomes prompts/get, their arguments checked first so a
 * malformed one fails as not run. read_resource's `export` and `file` ask
 * the owner to write the read's blobs to files (exportOf: the owner's
 * thread writes them, api/resource-export.ts); they never reach the server.
 */
import { AlbedoError } from '../../protocol/errors.ts';
import type { ServerState, StateReason } from '../../protocol/composer.ts';
import { label } from '../catalogue/definitions-text.ts';
import type { RouteEntry } from '../../protocol/catalogue.ts';
import type { ClientOp } from '../../protocol/services/transport.ts';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const bad = (message: string): AlbedoError => new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run' });

/** The arguments of a call: an object, or nothing (an empty object). */
export function callArguments(args: unknown): Record<string, unknown> {
  if (args === undefined || args === null) return {};
  if (!isRecord(args)) throw bad('the arguments of a call must be a JSON object');
  return args;
}

/**
 * The operation a route stands for, with the model's arguments already in
 * the server's form (restoreArguments with the route's plan: get_prompt's
 * renamed argument names back, strict mode's nulls dropped). get_prompt
 * sends only strings under the names given; anything else is refused as not run.
 */
export function operationFor(route: RouteEntry, args: Record<string, unknown>): ClientOp {
  switch (route.kind) {
    case 'tool':
      return { method: 'tools/call', name: route.tool, arguments: args };
    case 'read_resource': {
      const uri = args.uri;
      if (typeof uri !== 'string' || !uri) throw bad('read_resource needs `uri`, a non-empty string');
      return { method: 'resources/read', uri };
    }
    case 'get_prompt': {
      const name = args.name;
      if (typeof name !== 'string' || !name) throw bad('get_prompt needs `name`, a non-empty string');
      const given = args.arguments ?? {};
      if (!isRecord(given)) throw bad('get_prompt `arguments` must be an object of strings');
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(given)) {
        if (typeof v !== 'string') throw bad(`get_prompt argument ${JSON.stringify(k.slice(0, 64))} must be a string`);
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
      }
      return { method: 'prompts/get', name, arguments: out };
    }
  }
}

/** What a read_resource asks of its blobs: written to new files in the session's working directory (`file`: the name given). */
export interface ExportAsk {
  file?: string;
}

/** The longest `file` a read_resource may name (characters; each of its parts is checked again against NAME_MAX when written). */
export const MAX_EXPORT_FILE = 1_024;

/**
 * Whether a read_resource asks for its blobs to be exported (`export: true`, or a `file`; `export: false` with a
 * `file` contradicts itself): undefined for any other route. Its shape only; where the file may go is the owner's
 * check (api/resource-export.ts), which has the working directory. Bad arguments are ALBEDO_INVALID_ARGUMENT, not run.
 */
export function exportOf(route: RouteEntry, args: Record<string, unknown>): ExportAsk | undefined {
  if (route.kind !== 'read_resource') return undefined;
  // null is absent (a strict profile's optional arguments come as null when a plan does not drop them).
  const want = args.export ?? undefined;
  const file = args.file ?? undefined;
  if (want !== undefined && typeof want !== 'boolean') throw exportBad('read_resource `export` must be true or false', 'export');
  if (file !== undefined) {
    if (typeof file !== 'string' || !file || file.length > MAX_EXPORT_FILE || file.includes('\0')) {
      throw exportBad(`read_resource \`file\` must be a non-empty relative path of at most ${MAX_EXPORT_FILE} characters`, 'file');
    }
    if (want === false) throw exportBad('read_resource `file` names where to export: it needs `export` true (or absent)', 'file');
    return { file };
  }
  return want ? {} : undefined;
}

const exportBad = (message: string, argument: string): AlbedoError =>
  new AlbedoError('ALBEDO_INVALID_ARGUMENT', message, { outcome: 'not_run', data: { export: 'bad_argument', argument, read: false } });

/**
 * A name that resolved to nothing (resolveCall's ALBEDO_NOT_FOUND): when it
 * named a server of the session, a server waiting for a sign-in says so
 * (ALBEDO_NEEDS_SIGN_IN, not run); otherwise it stays not found, with that
 * server's state and reason in `data`.
 */
export function notAdvertised(
  err: unknown,
  serverOf: (name: string) => { name: string; state: ServerState; reason?: StateReason } | undefined,
): unknown {
  if (!AlbedoError.is(err) || err.code !== 'ALBEDO_NOT_FOUND') return err;
  const data = err.data as { server?: string } | undefined;
  const s = data?.server === undefined ? undefined : serverOf(data.server);
  if (!s) return err;
  if (s.state === 'needs_sign_in') {
    const message = `server ${label(s.name)} needs the user to sign in; the request did not run`;
    return new AlbedoError('ALBEDO_NEEDS_SIGN_IN', message, { outcome: 'not_run', data: { ...data, state: s.state } });
  }
  return new AlbedoError('ALBEDO_NOT_FOUND', err.message, { outcome: 'not_run', data: { ...data, state: s.state, reason: s.reason } });
}
