/**
 * The web pane's files and its login, answered here on Node's own request
 * (the guard has checked Host and Origin; no credential is needed), never
 * by the API's router: whatever a path under /ui spells, it reaches no API
 * route.
 *
 * - `GET /ui` → 308 to `/ui/`; `/ui/` → web/index.html; `/ui/<path>` → the
 *   file web/<path> of the package (found from this module, not the working
 *   directory), only an existing regular file inside web/ with one of the
 *   served extensions, reached through no dot-segment, no encoded `/` or
 *   `\`, no dotfile and no symbolic link out of web/ (the real path is
 *   checked); anything else is a 404.
 * - `GET /ui/vendor/preact-htm.js` → htm's preact standalone build (Preact,
 *   its hooks and htm in one ES module) from node_modules.
 * - `GET /ui/login?code=…` → a one-time code exchanged for the cookie
 *   (ui-auth.ts), 303 to /ui/#k=<the session's CSRF token>; a code unknown, used or expired → 403 and a
 *   page that says to run `albedo open`.
 *
 * GET and HEAD only (the login: GET only, so a HEAD cannot spend a code);
 * anything else is a 405. Every answer carries the pane's security headers.
 */
import { constants, promises as fsp, realpathSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeDefect } from './app.ts';
import { ApiError } from './errors.ts';
import { requestPath, UI_PATH } from './guard.ts';
import { uiError, type UiAuth } from './ui-auth.ts';

/** The package's web/ directory. */
export const WEB_ROOT = fileURLToPath(new URL('../web/', import.meta.url));

/** htm's standalone ES module (its exports map offers `htm/preact/standalone`; the browser build sits beside it). */
export function vendorFile(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.resolve('htm/preact/standalone'))), 'standalone.module.js');
}

/** The path the pane imports Preact + htm from. */
export const VENDOR_PATH = `${UI_PATH}/vendor/preact-htm.js`;
export const LOGIN_PATH = `${UI_PATH}/login`;
/** The pane's icon (web/favicon.svg): every page names it, so a browser asks for no /favicon.ico (which needs a credential). */
export const FAVICON_PATH = `${UI_PATH}/favicon.svg`;

/** What a file may be, by its extension. */
export const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

/** Sent with every /ui answer: the page loads only its own files, is never framed, and leaks no URL (a login code) as a Referer. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
};

/**
 * The real path of the file `sub` (what follows `/ui/`, as sent) names
 * under `root`, or null: each segment is percent-decoded and must be a
 * plain name (not empty, `.`, `..`, a dotfile, nor holding `/`, `\` or NUL
 * once decoded), the extension one of TYPES, and the real path (symbolic
 * links resolved) a regular file inside the real `root`, reached through no
 * dot-named directory.
 */
export async function resolveUiFile(root: string, sub: string): Promise<string | null> {
  const segments = sub.split('/');
  const names: string[] = [];
  for (const s of segments) {
    let name: string;
    try {
      name = decodeURIComponent(s);
    } catch {
      return null;
    }
    if (!name || name.startsWith('.') || /[/\\\0]/.test(name)) return null;
    names.push(name);
  }
  if (!Object.hasOwn(TYPES, path.extname(names.at(-1) ?? '').toLowerCase())) return null;
  let realRoot: string;
  let real: string;
  try {
    realRoot = await fsp.realpath(root);
    real = await fsp.realpath(path.join(realRoot, ...names));
  } catch {
    return null;
  }
  const rel = path.relative(realRoot, real);
  if (!rel || rel.startsWith('..') || path.isAbsolute(rel) || rel.split(path.sep).some((p) => p.startsWith('.'))) return null;
  if (!Object.hasOwn(TYPES, path.extname(real).toLowerCase())) return null;
  try {
    return (await fsp.stat(real)).isFile() ? real : null;
  } catch {
    return null;
  }
}

/** A file's bytes if it is a regular file (opened without following a link: `real` has none left). */
async function readRegular(real: string): Promise<Buffer | null> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
    if (!(await fh.stat()).isFile()) return null;
    return await fh.readFile();
  } catch {
    return null;
  } finally {
    await fh?.close();
  }
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page a spent or unknown login link gets: plain HTML, nothing the CSP would have to allow. */
export function expiredPage(): string {
  const title = 'This login link cannot be used';
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>` +
    `<link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml"></head>\n<body><main>\n` +
    `<h1>${escapeHtml(title)}</h1>\n<p>A login link works once, for a short while: this one was used already or has expired ` +
    '(or the daemon was restarted since).</p>\n<p>Run <code>albedo open</code> for a new one.</p>\n</main></body></html>\n'
  );
}

export interface UiFilesOptions {
  ui: UiAuth;
  /** The directory served (default: the package's web/). */
  root?: string;
  /** The daemon's log, for a defect here (never a code or a cookie). */
  log?: (line: string) => void;
}

type Answer = { status: number; headers?: Record<string, string>; body?: string | Buffer };

/** The handler of every /ui request the guard let through. */
export function uiFiles(o: UiFilesOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const root = o.root ?? WEB_ROOT;
  let vendor: string | null | undefined;
  const vendorPath = (): string | null => {
    if (vendor !== undefined) return vendor;
    try {
      vendor = realpathSync(vendorFile());
    } catch {
      vendor = null;
    }
    return vendor;
  };

  const apiError = (e: ApiError, extra: Record<string, string> = {}): Answer => ({
    status: e.status,
    headers: { 'content-type': 'application/json', ...extra },
    body: JSON.stringify(e.body()),
  });
  const notFound = (p: string): Answer =>
    apiError(new ApiError(404, 'ALBEDO_NOT_FOUND', `no file ${p.length > 200 ? `${p.slice(0, 200)}…` : p}`));
  const file = async (real: string | null, p: string): Promise<Answer> => {
    const bytes = real ? await readRegular(real) : null;
    if (!bytes) return notFound(p);
    return { status: 200, headers: { 'content-type': TYPES[path.extname(real!).toLowerCase()]! }, body: bytes };
  };

  const login = (req: IncomingMessage): Answer => {
    const query = (req.url ?? '').split('?').slice(1).join('?');
    const code = new URLSearchParams(query).get('code');
    const value = code ? o.ui.redeem(code) : null;
    const noStore = { 'cache-control': 'no-store' };
    if (!value) return { status: 403, headers: { ...noStore, 'content-type': TYPES['.html']! }, body: expiredPage() };
    // A browser that logs in again drops the session it had: one live session per browser.
    const old = o.ui.sessionOf(req.headers.cookie);
    if (old) o.ui.forget(old);
    // The CSRF token goes to the page in the fragment (never sent to a server, read by the pane into its origin's storage):
    // browsers send the cookie to every port of 127.0.0.1, so the cookie alone must open nothing.
    const session = o.ui.sessionOf(`${o.ui.cookieName}=${value}`)!;
    const location = `${UI_PATH}/#k=${encodeURIComponent(session.csrf)}`;
    return { status: 303, headers: { ...noStore, location, 'set-cookie': o.ui.setCookie(value) } };
  };

  const route = async (req: IncomingMessage): Promise<Answer> => {
    const p = requestPath(req) ?? '';
    const method = req.method ?? '';
    if (p === LOGIN_PATH) {
      if (method !== 'GET') return apiError(uiError(405, 'ALBEDO_METHOD_NOT_ALLOWED', `${p} answers GET only`), { allow: 'GET' });
      return login(req);
    }
    if (method !== 'GET' && method !== 'HEAD') {
      return apiError(uiError(405, 'ALBEDO_METHOD_NOT_ALLOWED', "the web pane's files answer GET and HEAD only"), { allow: 'GET, HEAD' });
    }
    if (p === UI_PATH) return { status: 308, headers: { location: `${UI_PATH}/` } };
    if (p === VENDOR_PATH) return file(vendorPath(), p);
    const sub = p.slice(UI_PATH.length + 1);
    return file(await resolveUiFile(root, sub === '' ? 'index.html' : sub), p);
  };

  const send = (req: IncomingMessage, res: ServerResponse, a: Answer): void => {
    if (res.headersSent || res.destroyed) return;
    const body = a.body === undefined ? undefined : typeof a.body === 'string' ? Buffer.from(a.body) : a.body;
    res.writeHead(a.status, { ...SECURITY_HEADERS, ...a.headers, 'content-length': String(body?.length ?? 0) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };

  return (req, res) => {
    // A body (a POST here is a mistake) is read and dropped before the answer, so the client is not cut off mid-send.
    let seen = 0;
    req.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > 4 * 1024 * 1024) req.destroy();
    });
    req.once('error', () => res.destroy());
    const answered = route(req).catch((err: unknown) => {
      o.log?.(`internal error on ${req.method} ${UI_PATH}: ${describeDefect(err)}`);
      return apiError(new ApiError(500, 'ALBEDO_INTERNAL', 'internal error in the daemon'));
    });
    const ended = new Promise<void>((r) => {
      if (req.readableEnded) r();
      else {
        req.once('end', () => r());
        req.once('close', () => r());
      }
    });
    void Promise.all([answered, ended]).then(([a]) => send(req, res, a));
  };
}
