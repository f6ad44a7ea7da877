/**
 * The web pane's API routes (`/v1/ui/…`), in the OpenAPI document like
 * every other route:
 *
 * - `POST /v1/ui/links` — a one-time login link; the bearer token only (a
 *   cookie cannot mint more of itself).
 * - `GET /v1/ui/session` — the request's cookie session (which had to send
 *   its CSRF token to be let in): when it ends unless used.
 * - `POST /v1/ui/logout` — ends the cookie session and clears the cookie.
 * - `POST /v1/ui/command-line` — a command line split as the CLI splits it
 *   (protocol/command-line.ts), so the pane's form has the CLI's parser and
 *   refusals.
 *
 * The guard (guard.ts) has admitted the request by the bearer token or the
 * cookie with its CSRF token (and, for a change, its Origin); an
 * `Authorization` header that reaches a route is the valid bearer token.
 */
import { createRoute, z, type OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { splitCommandLine } from '../protocol/command-line.ts';
import { ApiError } from './errors.ts';
import { errorSchema } from './schemas.ts';
import type { UiAuth } from './ui-auth.ts';

const json = <S>(schema: S, description: string) => ({ description, content: { 'application/json': { schema } } });
const err = (description: string) => json(errorSchema, description);

const COMMON = {
  401: err("no bearer token and no live web pane cookie, or a bearer token that is not this daemon's (ALBEDO_UNAUTHORIZED)"),
  403: err(
    "an Origin other than the daemon's own, or a change by the cookie without Origin (ALBEDO_BAD_ORIGIN) " +
      "or without the session's X-Albedo-CSRF (ALBEDO_CSRF)",
  ),
  421: err("a Host that is not a loopback name with the daemon's port (ALBEDO_BAD_HOST)"),
  500: err('a defect in the daemon (ALBEDO_INTERNAL)'),
} as const;

/** The longest command line taken: Linux's bound on one argument string (MAX_ARG_STRLEN). */
export const MAX_COMMAND_LINE = 131_072;

export const uiLinkSchema = z
  .object({
    url: z
      .string()
      .openapi({ description: 'http://127.0.0.1:PORT/ui/login?code=…: works once', example: 'http://127.0.0.1:40123/ui/login?code=…' }),
    expiresAt: z.string().openapi({ description: 'ISO 8601: when the link stops working (15 minutes after it was made)' }),
  })
  .openapi('UiLink');

export const uiSessionSchema = z
  .object({
    csrf: z.string().openapi({
      description:
        'the token every request by the cookie sends as X-Albedo-CSRF (the login gave it to the page in the fragment of its redirect)',
    }),
    expiresAt: z.string().openapi({ description: 'ISO 8601: when the session ends unless it is used again (12 hours idle)' }),
  })
  .openapi('UiSession');

export const commandLineBodySchema = z
  .strictObject({
    line: z
      .string()
      .max(MAX_COMMAND_LINE)
      .openapi({ description: 'a command as typed in a shell; no shell runs', example: 'npx -y pkg "/srv/my docs"' }),
  })
  .openapi('CommandLine');

export const commandLineSchema = z
  .object({
    command: z.string(),
    args: z.array(z.string()),
  })
  .openapi('CommandSplit');

const cookieOnly = [{ cookie: [] }];
const NO_SESSION = err('the request has no live cookie session: the bearer token alone, say (ALBEDO_NOT_FOUND)');

const postLinks = createRoute({
  method: 'post',
  path: '/v1/ui/links',
  tags: ['ui'],
  summary: 'A one-time login link to the web pane (bearer token only)',
  security: [{ bearer: [] }],
  responses: {
    201: json(uiLinkSchema, 'a link that logs a browser in once, within 15 minutes'),
    ...COMMON,
    401: err("no bearer token (a cookie cannot make links), or not this daemon's (ALBEDO_UNAUTHORIZED)"),
  },
});
const getSession = createRoute({
  method: 'get',
  path: '/v1/ui/session',
  tags: ['ui'],
  summary: "The web pane's cookie session: its CSRF token",
  security: cookieOnly,
  responses: { 200: json(uiSessionSchema, "the session of the request's cookie"), 404: NO_SESSION, ...COMMON },
});
const postLogout = createRoute({
  method: 'post',
  path: '/v1/ui/logout',
  tags: ['ui'],
  summary: "End the web pane's cookie session and clear the cookie",
  security: cookieOnly,
  responses: { 204: { description: 'ended: the cookie no longer works' }, 404: NO_SESSION, ...COMMON },
});
const postCommandLine = createRoute({
  method: 'post',
  path: '/v1/ui/command-line',
  tags: ['ui'],
  summary: 'Split a command line by shell quoting rules, as albedo mcp add --command does',
  request: { body: { required: true, content: { 'application/json': { schema: commandLineBodySchema } } } },
  responses: {
    200: json(commandLineSchema, 'the command and its arguments'),
    400: err(
      'not a body { line }, or a line only a shell could run (ALBEDO_INVALID_ARGUMENT, path ["body", "line"], the message says why)',
    ),
    413: err('the body is over 1 MiB (ALBEDO_TOO_LARGE)'),
    415: err('the body is not JSON (ALBEDO_INVALID_ARGUMENT)'),
    ...COMMON,
  },
});

const noSession = (): ApiError =>
  new ApiError(404, 'ALBEDO_NOT_FOUND', 'this request carries no live web pane cookie session (log in with albedo open)');

/** Adds the /v1/ui routes to `app`, and the cookie to its security schemes. */
export function uiRoutes(app: OpenAPIHono, ui: UiAuth): void {
  const route = <R extends RouteConfig>(r: R, handler: (c: Context) => Promise<Response> | Response): void => {
    app.openapi(r, handler as never);
  };
  app.openAPIRegistry.registerComponent('securitySchemes', 'cookie', {
    type: 'apiKey',
    in: 'cookie',
    name: 'albedo_ui_PORT',
    description:
      "the web pane's session cookie, albedo_ui_<the daemon's port>, from a one-time link (POST /v1/ui/links, albedo open); " +
      "a request by it that is not GET, HEAD or OPTIONS needs Origin (the daemon's own) and X-Albedo-CSRF (GET /v1/ui/session)",
  });

  route(postLinks, (c) => {
    // The guard refused a bad bearer token; with none, the request came by the cookie.
    if (c.req.header('authorization') === undefined) {
      throw new ApiError(
        401,
        'ALBEDO_UNAUTHORIZED',
        'a login link is made with the bearer token of $ALBEDO_HOME/daemon.json only (albedo open)',
      );
    }
    return c.json(ui.mintLink(), 201);
  });
  route(getSession, (c) => {
    const s = ui.sessionOf(c.req.header('cookie'));
    if (!s) throw noSession();
    c.header('cache-control', 'no-store');
    return c.json({ csrf: s.csrf, expiresAt: new Date(s.expiresAt).toISOString() }, 200);
  });
  route(postLogout, (c) => {
    const s = ui.sessionOf(c.req.header('cookie'));
    if (!s) throw noSession();
    ui.forget(s);
    c.header('set-cookie', ui.clearCookie());
    c.header('cache-control', 'no-store');
    return c.body(null, 204);
  });
  route(postCommandLine, (c) => {
    const { line } = c.req.valid('json' as never) as { line: string };
    const r = splitCommandLine(line);
    if ('problem' in r) throw new ApiError(400, 'ALBEDO_INVALID_ARGUMENT', r.problem, { path: ['body', 'line'] });
    const [command, ...args] = r.words;
    return c.json({ command: command!, args }, 200);
  });
}
