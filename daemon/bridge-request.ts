/**
 * The REST bridge's rules for one `albedo_request` call (rest-bridge.ts), pure
 * so they are tested alone: which methods, which paths, which bodies. A call
 * these refuse sends nothing to the API.
 *
 * The path is the point: the bridge sends it to the daemon's own origin with
 * the caller's token, so it must not name another host (a scheme, `//host`, a
 * backslash that URL parsers read as a slash), must not climb out of what it
 * says (`..`, `.`, or the same spelled `%2e` or twice encoded `%252e`; an
 * encoded slash, backslash or `%` only past the first segment, where a server's
 * name may hold one), and must not be changed on the way by URL parsing (a space, a
 * non-ASCII character, a control character, a fragment): the URL built from it
 * must be the daemon's origin with exactly the path given. It must not reach
 * the bridge itself (`/mcp`: a call that calls itself) nor the web pane
 * (`/ui`, which is no API).
 */
import { z } from 'zod';

export const BRIDGE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type BridgeMethod = (typeof BRIDGE_METHODS)[number];

/** The longest path (query included) a call may give. */
export const MAX_PATH_CHARS = 4096;

/** The tool's arguments as advertised (its JSON Schema comes from this); the rules below are stricter. */
export const bridgeInputSchema = z.strictObject({
  method: z.enum(BRIDGE_METHODS).describe('the HTTP method'),
  path: z
    .string()
    .min(1)
    .max(MAX_PATH_CHARS)
    .describe('a path on the daemon, query string allowed: /v1/mcp/servers, /v1/mcp/servers/docs/tools (GET /openapi.json lists them)'),
  body: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('the JSON body, an object (POST, PUT, PATCH, DELETE only); sent as application/json'),
});

export interface BridgeRequest {
  method: BridgeMethod;
  path: string;
  body?: Record<string, unknown>;
}

/** Why a call is refused: the field at fault (in the tool's arguments) and why, in words that start with the field. */
export interface BridgeProblem {
  path: Array<string | number>;
  message: string;
}

export type BridgeParse = { ok: true; request: BridgeRequest } | { ok: false; problem: BridgeProblem };

/** Paths (first segment, compared decoded and in any case) the bridge never sends to. */
const REFUSED_ROOTS = new Set(['mcp', 'ui']);

/** What `%XX` must never spell in a path: a dot (URL parsing reads `%2e` as `.`, making dot segments), a control character. */
function badEscape(hex: string): boolean {
  const c = parseInt(hex, 16);
  return c === 0x2e || c < 0x20 || c === 0x7f;
}

/**
 * What `%XX` must not spell in the first segment either: a slash, a backslash, a `%`. No route's first segment holds
 * one, and decoded it could hide `/mcp` or `/ui` behind another first segment. Later segments may: a server's name
 * can hold a slash (an HTTP server's derived name, `h.example.com/mcp`) or a `%`, which a path spells `%2F`, `%25`.
 */
function badInFirst(hex: string): boolean {
  const c = parseInt(hex, 16);
  return c === 0x2f || c === 0x5c || c === 0x25;
}

/** Why `p` is not a path the bridge may send to `origin` (the daemon's, e.g. `http://127.0.0.1:4000`), or null. */
export function pathProblem(p: string, origin: string): string | null {
  if (p.length > MAX_PATH_CHARS) return `is over ${MAX_PATH_CHARS} characters`;
  if (!p.startsWith('/')) return 'must start with "/": a path on the daemon, not a URL';
  if (p.startsWith('//')) return 'must not start with "//", which names another host';
  if (/[\u0000-\u001f\u007f]/.test(p)) return 'must not hold a control character';
  if (p.includes('\\')) return 'must not hold a backslash';
  if (p.includes('#')) return 'must not hold a fragment ("#")';
  const q = p.indexOf('?');
  const pathname = q < 0 ? p : p.slice(0, q);
  const segments = pathname.split('/');
  if (segments.some((s) => s === '.' || s === '..')) return 'must not hold a "." or ".." segment';
  const firstEnds = 1 + (segments[1] ?? '').length;
  for (let i = pathname.indexOf('%'); i >= 0; i = pathname.indexOf('%', i + 1)) {
    const hex = pathname.slice(i + 1, i + 3);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) return 'holds a "%" that is not followed by two hex digits';
    if (badEscape(hex)) return `must not encode a dot or a control character (it holds %${hex})`;
    if (i < firstEnds && badInFirst(hex)) return `must not encode a slash, a backslash or a "%" in its first segment (it holds %${hex})`;
  }
  // A dot encoded twice (`%252e`) is a dot once the API's router has decoded the path.
  if (/%252e/i.test(pathname)) return 'must not encode a dot, even twice (it holds %252e)';
  let root: string;
  try {
    root = decodeURIComponent(segments[1] ?? '').toLowerCase();
  } catch {
    return 'holds a "%" sequence that does not decode';
  }
  if (REFUSED_ROOTS.has(root)) return `must not be under /${root}: the bridge sends only to the daemon's API`;
  let url: URL;
  try {
    url = new URL(p, origin);
  } catch {
    return 'is not a path';
  }
  if (url.origin !== new URL(origin).origin) return "must stay on the daemon's origin";
  if (url.pathname + url.search !== p) return 'would be changed by URL parsing (a space, a non-ASCII character, an empty "?"): encode it';
  return null;
}

/** The call's arguments checked: the request to send, or why none is sent. */
export function parseBridgeRequest(input: unknown, origin: string): BridgeParse {
  const r = bridgeInputSchema.safeParse(input ?? {});
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const path = issue.path.map((s) => (typeof s === 'symbol' ? String(s) : s));
    if (issue.code === 'unrecognized_keys' && issue.keys.length) path.push(issue.keys[0]!);
    return { ok: false, problem: { path, message: `${path.join('.') || 'arguments'}: ${issue.message}` } };
  }
  const { method, path, body } = r.data;
  const why = pathProblem(path, origin);
  if (why) return { ok: false, problem: { path: ['path'], message: `path: ${why}` } };
  if (body !== undefined && (method === 'GET' || method === 'HEAD'))
    return { ok: false, problem: { path: ['body'], message: `body: a ${method} request has no body` } };
  return { ok: true, request: body === undefined ? { method, path } : { method, path, body } };
}
